import type { NodeContext, NodeInput } from '../../../../src/worker/dag/dag.types.js';

/** The context the runner would give node `nodeId` of execution `exec-1` (workspace `ws-a`) on its first try. */
export function contextFor(nodeId: string, options: { input?: NodeInput; signal?: AbortSignal } = {}): NodeContext {
  return {
    executionId: 'exec-1',
    workspaceId: 'ws-a',
    attemptId: 'attempt-1',
    nodeId,
    idempotencyKey: `exec-1:${nodeId}`,
    input: options.input ?? { input: {}, nodes: {} },
    signal: options.signal ?? new AbortController().signal,
    tryNumber: 1,
  };
}
