import { indexGraph, topologicalOrder, type GraphIndex } from '../../workflows/domain/graph.js';
import type { WorkflowGraph, WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import type { ExecutionError } from '../../executions/domain/execution.events.js';
import type { NodeInput, NodeRecord } from './dag.types.js';
import { decideTrigger, type FinalOutcome, type TriggerDecision } from '../../workflows/domain/trigger-rules.js';

type FinalRecord = Extract<NodeRecord, { status: FinalOutcome }>;

/** What a switch's output says it took; an output of another shape takes nothing. */
function takenBy(output: unknown): { case: string | number; to: readonly string[] } {
  const { case: taken, to } = (output ?? {}) as { case?: unknown; to?: unknown };
  return {
    case: typeof taken === 'number' || typeof taken === 'string' ? taken : 'none',
    to: Array.isArray(to) ? to.filter((id): id is string => typeof id === 'string') : [],
  };
}

/**
 * Bookkeeping of one run: each node's record and, for each undecided node, how many of its
 * predecessors have not reached a final state yet. A node is unblocked only when that count
 * reaches zero: "not produced yet" (count > 0) is never mistaken for "will never be produced"
 * (a skipped or failed predecessor, which counts as final).
 */
export class DagRunState {
  private readonly index: GraphIndex;
  private readonly nodes: ReadonlyMap<string, WorkflowNode>;
  private readonly rank: ReadonlyMap<string, number>;
  private readonly records = new Map<string, NodeRecord>();
  private readonly waitingOn = new Map<string, number>();

  constructor(
    graph: WorkflowGraph,
    completedNodes: Readonly<Record<string, unknown>>,
    failedNodes: Readonly<Record<string, ExecutionError>> = {},
  ) {
    this.index = indexGraph(graph);
    this.nodes = new Map(graph.nodes.map((node) => [node.id, node]));
    this.rank = new Map(topologicalOrder(this.index).map((id, position) => [id, position]));
    for (const id of this.index.nodeIds) {
      if (Object.hasOwn(completedNodes, id)) {
        this.records.set(id, { status: 'succeeded', output: completedNodes[id] ?? null, reused: true, tries: 0 });
      } else if (Object.hasOwn(failedNodes, id)) {
        this.records.set(id, { status: 'failed', error: failedNodes[id], tries: 0 });
      }
    }
    for (const id of this.index.nodeIds) {
      if (this.records.has(id)) continue;
      this.waitingOn.set(id, this.predecessorsOf(id).filter((p) => this.finalOutcome(p) === undefined).length);
    }
  }

  node(id: string): WorkflowNode {
    const node = this.nodes.get(id);
    if (!node) throw new Error(`DagRunState: unknown node ${id}`);
    return node;
  }

  /** Position in topological order: ready nodes start in this order. */
  rankOf(id: string): number {
    return this.rank.get(id)!;
  }

  /** Undecided nodes whose predecessors are all final already (roots, or behind reused nodes). */
  initiallyUnblocked(): string[] {
    return [...this.waitingOn]
      .filter(([, count]) => count === 0)
      .map(([id]) => id)
      .sort(this.byRank);
  }

  decide(id: string): TriggerDecision {
    const predecessors = this.predecessorsOf(id).map((p) => {
      const outcome = this.finalOutcome(p);
      if (outcome === undefined) throw new Error(`DagRunState: ${id} decided before ${p} was final`);
      return { id: p, outcome };
    });
    return this.branchNotTaken(id) ?? decideTrigger(this.node(id).trigger, predecessors);
  }

  /**
   * A target of a switch that succeeded without taking it is skipped, whatever its trigger rule:
   * the branch was not chosen. Decided from the switch's output, so a resumed attempt that reuses
   * it routes the same way.
   */
  private branchNotTaken(id: string): TriggerDecision | undefined {
    for (const p of this.predecessorsOf(id)) {
      const node = this.node(p);
      const record = this.records.get(p);
      if (node.type !== 'switch' || record?.status !== 'succeeded') continue;
      const targets = [...node.config.cases.flatMap((branch) => branch.to), ...(node.config.default ?? [])];
      if (!targets.includes(id)) continue;
      const taken = takenBy(record.output);
      if (taken.to.includes(id)) continue;
      return { run: false, reason: `switch ${p} took ${taken.case === 'default' ? 'the default' : `case ${taken.case}`}` };
    }
    return undefined;
  }

  inputOf(id: string, input: Record<string, unknown>): NodeInput {
    const nodes: [string, unknown][] = [];
    for (const p of this.predecessorsOf(id)) {
      const record = this.records.get(p);
      if (record?.status === 'succeeded') nodes.push([p, record.output]);
    }
    // fromEntries defines own properties: no node id can reach the prototype.
    return { input, nodes: Object.fromEntries(nodes) };
  }

  /** Records a non-final state (awaiting approval, cancelled) or a final one that unblocks nothing. */
  record(id: string, record: NodeRecord): void {
    this.records.set(id, record);
    this.waitingOn.delete(id);
  }

  /** Records a final state; returns the successors it was the last one to unblock, in rank order. */
  complete(id: string, record: FinalRecord): string[] {
    this.record(id, record);
    const unblocked: string[] = [];
    for (const successor of this.index.successors.get(id) ?? []) {
      const count = this.waitingOn.get(successor);
      if (count === undefined) continue;
      this.waitingOn.set(successor, count - 1);
      if (count - 1 === 0) unblocked.push(successor);
    }
    return unblocked.sort(this.byRank);
  }

  leafOutputs(): Record<string, unknown> {
    const outputs: [string, unknown][] = [];
    for (const id of this.index.leaves) {
      const record = this.records.get(id);
      if (record?.status === 'succeeded') outputs.push([id, record.output]);
    }
    return Object.fromEntries(outputs);
  }

  snapshot(): Record<string, NodeRecord> {
    return Object.fromEntries(this.index.nodeIds.map((id) => [id, this.records.get(id) ?? { status: 'pending' }]));
  }

  private predecessorsOf(id: string): readonly string[] {
    return this.index.predecessors.get(id) ?? [];
  }

  private finalOutcome(id: string): FinalOutcome | undefined {
    const status = this.records.get(id)?.status;
    return status === 'succeeded' || status === 'failed' || status === 'skipped' ? status : undefined;
  }

  private readonly byRank = (a: string, b: string): number => this.rankOf(a) - this.rankOf(b);
}
