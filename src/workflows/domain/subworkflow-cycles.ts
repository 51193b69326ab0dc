import type { WorkflowGraph } from './workflow-graph.schema.js';

/** A `subworkflow` node's target: a workflow, at a pinned revision or the latest. */
export interface SubworkflowTarget {
  /** Index of the node in its graph. */
  index: number;
  workflow: string;
  revision: number | undefined;
}

/** The workflow revisions a graph's `subworkflow` nodes run. */
export function subworkflowTargets(graph: WorkflowGraph): SubworkflowTarget[] {
  return graph.nodes.flatMap((node, index) =>
    node.type === 'subworkflow' ? [{ index, workflow: node.config.workflow, revision: node.config.revision }] : [],
  );
}

/** How a target is known among the graphs read: its name and pinned revision, or `latest`. */
export const targetKey = (target: Pick<SubworkflowTarget, 'workflow' | 'revision'>): string =>
  `${target.workflow}@${target.revision ?? 'latest'}`;

/** A path of workflow names from the graph being published back to itself, and the node it leaves by. */
export interface SubworkflowCycle {
  index: number;
  path: string[];
}

/**
 * The first way `graph`, published as `name`, reaches `name` again through the sub-workflows it
 * runs, or null. `graphs` holds every revision reachable from it (by `targetKey`); a target
 * missing from it leads nowhere. Any revision of `name` closes the cycle: an execution refuses a
 * child whose workflow already runs above it, whatever its revision.
 */
export function subworkflowCycle(name: string, graph: WorkflowGraph, graphs: ReadonlyMap<string, WorkflowGraph>): SubworkflowCycle | null {
  const visited = new Set<string>();
  const walk = (target: SubworkflowTarget, path: string[]): string[] | null => {
    if (target.workflow === name) return [...path, name];
    const key = targetKey(target);
    const next = graphs.get(key);
    if (next === undefined || visited.has(key)) return null;
    visited.add(key);
    for (const inner of subworkflowTargets(next)) {
      const found = walk(inner, [...path, target.workflow]);
      if (found !== null) return found;
    }
    return null;
  };
  for (const target of subworkflowTargets(graph)) {
    const path = walk(target, [name]);
    if (path !== null) return { index: target.index, path };
  }
  return null;
}
