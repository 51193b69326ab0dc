import { setTimeout as delay } from 'node:timers/promises';
import type { ExecutionError } from '../../executions/domain/execution.events.js';
import { backoffMs, shouldRetry } from '../../executions/domain/retry-policy.js';
import type { WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import type { ExecuteNode, NodeContext, Sleep } from './dag.types.js';
import { toNodeFailure } from './node-error.js';

/** How the tries of one node ended. Never a rejection: the runner awaits it unconditionally. */
export type TriesOutcome =
  | { readonly status: 'succeeded'; readonly output: unknown; readonly tries: number }
  | { readonly status: 'failed'; readonly error: ExecutionError; readonly tries: number }
  | { readonly status: 'cancelled'; readonly tries: number };

/** Real timers, abortable: a cancelled run does not sit out a backoff. */
export const abortableSleep: Sleep = (ms, signal) => delay(ms, undefined, { signal });

export interface TryNodeOptions {
  readonly executeNode: ExecuteNode;
  readonly sleep: Sleep;
  readonly random: () => number;
}

/**
 * Runs a node under its own retry policy, inside the attempt: exponential backoff with jitter
 * between tries, no retry for `nonRetryable` codes or `retryable: false`. Once the signal is
 * aborted, whatever the node threw counts as cancellation, not as a node failure.
 */
export async function tryNode(node: WorkflowNode, context: Omit<NodeContext, 'tryNumber'>, options: TryNodeOptions): Promise<TriesOutcome> {
  const { signal } = context;
  for (let tryNumber = 1; ; tryNumber++) {
    if (signal.aborted) return { status: 'cancelled', tries: tryNumber - 1 };
    let error: ExecutionError;
    try {
      const output = await options.executeNode(node, { ...context, tryNumber });
      return { status: 'succeeded', output: output === undefined ? null : output, tries: tryNumber };
    } catch (thrown) {
      if (signal.aborted) return { status: 'cancelled', tries: tryNumber };
      error = toNodeFailure(thrown);
    }
    if (!shouldRetry(node.retry, tryNumber, error)) return { status: 'failed', error, tries: tryNumber };
    try {
      await options.sleep(backoffMs(node.retry, tryNumber, options.random()), signal);
    } catch (thrown) {
      if (signal.aborted) return { status: 'cancelled', tries: tryNumber };
      // A sleep that fails on its own is a worker bug; it must not pass for a node outcome.
      throw thrown;
    }
  }
}
