import { uuidV5 } from '../../core/ids.js';
import type { ParentLink } from './execution.events.js';
import type { ChildRecord, StartedExecution } from './execution.state.js';

/** Deepest a child execution may sit below its top-level ancestor (which is at depth 0). */
export const MAX_SUBWORKFLOW_DEPTH = 10;

/**
 * The child execution a `subworkflow` node's `seq`-th child is: a name-based uuid of the parent,
 * the node and the count, so a redelivered, resumed or retried request of the same try names the
 * same child (and its start is idempotent by the stream's existence), while a retried try, which
 * asks again after the previous child ended, names a new one.
 */
export function childExecutionIdOf(parentExecutionId: string, nodeId: string, seq: number): string {
  return uuidV5(`subworkflow:${parentExecutionId}:${nodeId}:${seq}`);
}

/**
 * The top-level execution of the tree `s` belongs to: itself when it has no parent, else the root
 * its start recorded. A child started before roots were recorded is the root of a tree of its own.
 */
export function rootOf(s: StartedExecution): string {
  return s.parent?.rootExecutionId ?? s.executionId;
}

/** The workflow names from the root of `s`'s tree down to `s` itself: what a child of `s` must not run again. */
export function lineageOf(s: StartedExecution): string[] {
  return [...(s.parent?.ancestors ?? []), s.workflow.name];
}

/** The link a child of `s` started by `nodeId` records: its parent, depth, root and ancestors. */
export function childLinkOf(s: StartedExecution, nodeId: string): ParentLink {
  return {
    executionId: s.executionId,
    nodeId,
    depth: (s.parent?.depth ?? 0) + 1,
    rootExecutionId: rootOf(s),
    ancestors: lineageOf(s),
  };
}

export function isSubworkflowNode(s: StartedExecution, nodeId: string): boolean {
  return s.workflow.graph.nodes.find((n) => n.id === nodeId)?.type === 'subworkflow';
}

export function childrenOf(s: StartedExecution): ChildRecord[] {
  // Documents folded before sub-workflows have no `children`.
  return Object.values(s.children ?? {});
}

export function liveChildOf(s: StartedExecution, nodeId: string): ChildRecord | undefined {
  return childrenOf(s).find((c) => c.nodeId === nodeId && c.status === 'running');
}
