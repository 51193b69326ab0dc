import { NodeError } from '../dag/node-error.js';
import type { NodeExecutor } from './node-executor.js';

/** Does nothing; its output is null. Useful as a join point. */
export const executeNoop: NodeExecutor<'noop'> = async () => null;

/**
 * A `delay` computes nothing in the worker: the run reports the node as waiting and the control
 * plane keeps a durable timer for it (docs/architecture.md, "Waiting steps"). Its output is null.
 */
export const executeDelay: NodeExecutor<'delay'> = async () => null;

/** A `wait_signal` node likewise: its output, the signal's payload, comes from the control plane. */
export const executeWaitSignal: NodeExecutor<'wait_signal'> = async () => null;

/** Fails on purpose with the configured error, to exercise retry policies. */
export const executeFail: NodeExecutor<'fail'> = async (node) => {
  throw new NodeError(node.config.code ?? 'node_failed', node.config.message ?? `node ${node.id} failed on purpose`, node.config.retryable);
};
