import { NodeError } from '../dag/node-error.js';
import type { Sleep } from '../dag/dag.types.js';
import type { NodeExecutor } from './node-executor.js';

/** Does nothing; its output is null. Useful as a join point. */
export const executeNoop: NodeExecutor<'noop'> = async () => null;

/** Waits `config.ms`; rejects as soon as the run is aborted, so a cancel never waits it out. */
export function createDelayNode(sleep: Sleep): NodeExecutor<'delay'> {
  return async (node, ctx) => {
    await sleep(node.config.ms, ctx.signal);
    return null;
  };
}

/** Fails on purpose with the configured error, to exercise retry policies. */
export const executeFail: NodeExecutor<'fail'> = async (node) => {
  throw new NodeError(node.config.code ?? 'node_failed', node.config.message ?? `node ${node.id} failed on purpose`, node.config.retryable);
};
