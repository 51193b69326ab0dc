import {
  workflowGraphSchema,
  type WorkflowDefinition,
  type WorkflowGraph,
} from '../../../../src/workflows/domain/workflow-graph.schema.js';
import type { DagEvent, ExecuteNode, NodeContext, ReportDagEvent } from '../../../../src/worker/dag/dag.types.js';
import { deferred, type Deferred } from './deferred.js';

type NodeSpec = WorkflowDefinition['nodes'][number];

/** A validated graph from terse edges: `graphOf(nodes, 'A>B', 'B>C')`. */
export function graphOf(nodes: readonly (string | NodeSpec)[], ...edges: string[]): WorkflowGraph {
  return workflowGraphSchema.parse({
    nodes: nodes.map((node) => (typeof node === 'string' ? { id: node, type: 'noop' } : node)),
    edges: edges.map((edge) => {
      const [from, to] = edge.split('>');
      return { from, to };
    }),
  });
}

/** Records reported events; `failOn` makes the report of a matching event reject. */
export function recordingReport(failOn?: (event: DagEvent) => boolean): { events: DagEvent[]; report: ReportDagEvent } {
  const events: DagEvent[] = [];
  const report: ReportDagEvent = async (event) => {
    if (failOn?.(event)) throw new Error(`broker unavailable for ${event.kind} ${event.nodeId}`);
    events.push(event);
  };
  return { events, report };
}

/** Short form of an event sequence: `started:A`, `succeeded:A`, `skipped:C`. */
export const eventTrace = (events: readonly DagEvent[]) => events.map((e) => `${e.kind.replace('node_', '')}:${e.nodeId}`);

type Behaviour = (ctx: NodeContext) => Promise<unknown>;

/**
 * A node executor driven by the test: nodes succeed with `{ by: id }` unless held at a barrier
 * (`hold`) or given a behaviour (`script`). Counts how many run at once.
 */
export class ScriptedNodes {
  readonly calls: NodeContext[] = [];
  running = 0;
  maxRunning = 0;
  readonly settledAfterAbort: string[] = [];
  private readonly gates = new Map<string, Deferred<unknown>>();
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly startWaiters = new Map<string, Deferred<NodeContext>>();

  /** The node waits until the returned barrier is resolved (its output) or rejected. */
  hold(nodeId: string): Deferred<unknown> {
    const gate = deferred<unknown>();
    this.gates.set(nodeId, gate);
    return gate;
  }

  script(nodeId: string, behaviour: Behaviour): void {
    this.behaviours.set(nodeId, behaviour);
  }

  /** Resolves when the node's (next) execution begins. */
  started(nodeId: string): Promise<NodeContext> {
    const earlier = this.calls.find((ctx) => ctx.nodeId === nodeId);
    if (earlier) return Promise.resolve(earlier);
    const waiter = this.startWaiters.get(nodeId) ?? deferred<NodeContext>();
    this.startWaiters.set(nodeId, waiter);
    return waiter.promise;
  }

  callsOf(nodeId: string): NodeContext[] {
    return this.calls.filter((ctx) => ctx.nodeId === nodeId);
  }

  readonly execute: ExecuteNode = async (node, ctx) => {
    this.calls.push(ctx);
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    this.startWaiters.get(node.id)?.resolve(ctx);
    try {
      const behaviour = this.behaviours.get(node.id);
      if (behaviour) return await behaviour(ctx);
      const gate = this.gates.get(node.id);
      if (gate) return await abortable(gate.promise, ctx.signal);
      return { by: node.id };
    } finally {
      this.running--;
      if (ctx.signal.aborted) this.settledAfterAbort.push(node.id);
    }
  };
}

/** Rejects with the signal's reason as soon as it aborts. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (reason: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(reason);
      },
    );
  });
}
