import type { ExecutionError } from '../../executions/domain/execution.events.js';

/** Longest error message carried in a node event (the event schema's limit). */
const MAX_MESSAGE_LENGTH = 4096;

/**
 * A node's own failure, with the stable `code` that retry policies (`nonRetryable`) and
 * operators match on. `retryable: false` stops node-level retries whatever the policy says;
 * `undefined` leaves the decision to the policy.
 */
export class NodeError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryable?: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The node's work never began: it was still waiting for a shared resource (an interpreter thread)
 * when its `dropIfWaiting` signal aborted. Not a failure of the node: the try does not count.
 */
export class NodeNotStartedError extends Error {
  constructor(nodeId: string) {
    super(`node ${nodeId} was dropped before it started`);
    this.name = new.target.name;
  }
}

/** The code of a failure that was not a NodeError: a bug or an unexpected rejection in a node type. */
export const UNEXPECTED_NODE_ERROR = 'node_error';

/** The error a node event carries: a NodeError keeps its code; anything else becomes `node_error`. */
export function toNodeFailure(error: unknown): ExecutionError {
  if (error instanceof NodeError) {
    return {
      code: error.code,
      message: truncate(error.message),
      ...(error.retryable !== undefined ? { retryable: error.retryable } : {}),
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: UNEXPECTED_NODE_ERROR, message: truncate(message || 'the node failed') };
}

function truncate(message: string): string {
  return message.length <= MAX_MESSAGE_LENGTH ? message : `${message.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
}
