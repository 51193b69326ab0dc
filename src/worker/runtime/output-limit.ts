import { MAX_RESULT_MESSAGE_BYTES } from '../../core/bus.port.js';
import type { ExecutionError } from '../../executions/domain/execution.events.js';
import type { ExecuteNode } from '../dag/dag.types.js';
import { NodeError } from '../dag/node-error.js';

/**
 * Room a result message needs besides the output it carries: its ids (at most a few hundred
 * bytes of them), fencing token, sequence, kind and node id. The output itself is embedded as
 * the same JSON text it is alone.
 */
export const RESULT_ENVELOPE_BYTES = 4 * 1024;

/** Largest output a node may produce: its result message must stay within MAX_RESULT_MESSAGE_BYTES. */
export const MAX_NODE_OUTPUT_BYTES = MAX_RESULT_MESSAGE_BYTES - RESULT_ENVELOPE_BYTES;

/** Bytes of `value` as JSON text (UTF-8), as a result message would carry it. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
}

/** The failure of a run whose output is too large to report; never retried, the same output would be again. */
export function outputTooLarge(message: string): ExecutionError {
  return { code: 'output_too_large', message, retryable: false };
}

/**
 * Every node's output is measured before it counts as succeeded: one too large for its result
 * message fails the node with `output_too_large` (not retryable) and the limit in the message,
 * instead of being published, dead-lettered, and leaving the execution running until its lease
 * expired (promise 6, docs/architecture.md).
 */
export function limitNodeOutputs(executeNode: ExecuteNode, maxBytes: number = MAX_NODE_OUTPUT_BYTES): ExecuteNode {
  return async (node, ctx) => {
    const output = await executeNode(node, ctx);
    assertOutputFits(node.id, output, maxBytes);
    return output;
  };
}

/** Throws `output_too_large` (a NodeError) when the output would not fit in its node's result message. */
export function assertOutputFits(nodeId: string, output: unknown, maxBytes: number = MAX_NODE_OUTPUT_BYTES): void {
  const bytes = jsonBytes(output);
  if (bytes <= maxBytes) return;
  const { code, message, retryable } = outputTooLarge(
    `the output of node ${nodeId} is ${bytes} bytes as JSON; the limit is ${maxBytes} bytes ` +
      `(a result message carries at most ${MAX_RESULT_MESSAGE_BYTES} bytes, its envelope included)`,
  );
  throw new NodeError(code, message, retryable);
}
