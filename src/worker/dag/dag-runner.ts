import type { ExecutionError } from '../../executions/domain/execution.events.js';
import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
import { pendingApproval } from './approval.js';
import { DagRunState } from './dag-run-state.js';
import type { DagEvent, DagResult, NodeRecord, PendingApproval, RunDagOptions } from './dag.types.js';
import { MapRun } from './map-run.js';
import { abortableSleep, tryNode, type TriesOutcome, type TryNodeOptions } from './node-retry.js';

export const DEFAULT_CONCURRENCY = 4;

type WaitKind = 'task' | 'subworkflow' | 'timer' | 'signal';

/** What a node of this type waits for outside the run, if anything. */
function waitKindOf(type: string): WaitKind | undefined {
  return ({ task: 'task', subworkflow: 'subworkflow', delay: 'timer', wait_signal: 'signal' } as const)[
    type as 'task' | 'subworkflow' | 'delay' | 'wait_signal'
  ];
}

/**
 * `report` rejected: the event may not have reached the control plane, so the run stops (running
 * nodes are aborted and awaited) and this error leaves `runDag`. It is an infrastructure failure
 * of the attempt, never a node failure and never a success.
 */
export class DagReportError extends Error {
  constructor(
    readonly event: DagEvent,
    cause: unknown,
  ) {
    super(`reporting ${event.kind} of node ${event.nodeId} failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = 'DagReportError';
  }
}

/**
 * Runs one attempt of a workflow graph.
 *
 * - A node is decided only when every predecessor is final (succeeded, failed past its retries,
 *   skipped); its trigger rule then runs or skips it. Independent ready nodes run in parallel,
 *   at most `concurrency` at once, started in topological order.
 * - `completedNodes` count as succeeded from the start: not executed, not reported (their
 *   events were reported by the attempt that ran them); the result marks them `reused`.
 * - Events are reported in causal order: a node's final event is acknowledged before any
 *   successor is decided or started. Given `hold`, the events of pure nodes (`isPure`: their
 *   start and result) and of skipped nodes are held instead, so their successors go on at once;
 *   the reporter sends them ahead of the next report (acknowledged before a node with effects
 *   starts) or with the terminal result.
 * - `approval` nodes are never executed: a runnable approval is recorded as pending, the nodes
 *   behind it stay pending, everything else runs, and the outcome is `suspended` (unless
 *   something failed). To resume, the caller passes the decision as the approval node's output
 *   in `completedNodes` of the next attempt.
 * - Outcome: `cancelled` if the signal aborted (running nodes are aborted and awaited, nothing
 *   new starts, nothing more is reported); else `failed` if any node failed, even when an
 *   `all_done` successor ran — the error is the first failed node's; else `suspended`; else
 *   `succeeded`.
 * - Rejects with `DagReportError` when `report` rejects (an AggregateError when, while stopping,
 *   a node task also crashed), and with a plain Error for a graph that has a cycle.
 */
export async function runDag(options: RunDagOptions): Promise<DagResult> {
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`runDag: concurrency must be an integer >= 1, got ${concurrency}`);
  }
  return new DagRun(options, concurrency).execute();
}

type Settlement = { readonly nodeId: string; readonly outcome: TriesOutcome } | { readonly nodeId: string; readonly crash: unknown };

class DagRun {
  private readonly state: DagRunState;
  private readonly controller = new AbortController();
  private readonly ready: string[] = [];
  private readonly running = new Map<string, Promise<Settlement>>();
  private readonly approvals: PendingApproval[] = [];
  /** Nodes whose wait was asked for in this run (tasks, timers, signals). */
  private readonly waiting: { readonly nodeId: string; readonly kind: WaitKind }[] = [];
  private firstFailure: { readonly nodeId: string; readonly error: ExecutionError } | undefined;
  private readonly tryOptions: TryNodeOptions;
  /** Pure nodes running whose node_started is held with their result. */
  private readonly startNotReported = new Set<string>();
  /** A report of map item facts that failed: the run stops with it, as with any failed report. */
  private itemReportFailure: unknown;

  constructor(
    private readonly options: RunDagOptions,
    private readonly concurrency: number,
  ) {
    this.state = new DagRunState(options.graph, options.completedNodes ?? {}, options.failedNodes ?? {});
    // A wait that failed earlier in this try fails the run as a node failing here would (first in graph order).
    const failed = options.graph.nodes.find((node) => Object.hasOwn(options.failedNodes ?? {}, node.id));
    if (failed !== undefined) this.firstFailure = { nodeId: failed.id, error: options.failedNodes![failed.id] };
    this.tryOptions = {
      executeNode: options.executeNode,
      sleep: options.sleep ?? abortableSleep,
      random: options.random ?? Math.random,
    };
  }

  async execute(): Promise<DagResult> {
    const { signal } = this.options;
    // Promise 7 (docs/architecture.md): the caller's abort reaches every running node through one signal.
    const onAbort = () => this.controller.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      await this.unblock(this.state.initiallyUnblocked());
      await this.loop();
    } catch (error) {
      this.controller.abort(error);
      const crashes = await this.drain();
      throw crashes.length === 0 ? error : new AggregateError([error, ...crashes], 'the DAG run failed');
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    return this.result();
  }

  /**
   * Task nodes (their output is the input of a task the control plane hands out), subworkflow
   * nodes (of the child execution it starts), `delay` nodes (a durable timer) and `wait_signal`
   * nodes: the run asks for the wait and goes on without them.
   */
  private waitsOutside(nodeId: string): boolean {
    return waitKindOf(this.state.node(nodeId).type) !== undefined;
  }

  /** Held rather than reported: only when the reporter can hold events. */
  private isPure(nodeId: string): boolean {
    return this.options.hold !== undefined && (this.options.isPure?.(this.state.node(nodeId)) ?? false);
  }

  private get aborted(): boolean {
    return this.controller.signal.aborted;
  }

  private async loop(): Promise<void> {
    for (;;) {
      // Nodes ready together are started together: their node_started reports go out at once.
      const starting = this.ready.splice(0, this.aborted ? 0 : Math.max(0, this.concurrency - this.running.size));
      await settleAll(starting.map((nodeId) => this.start(nodeId)));
      if (this.running.size === 0) return;
      // Task promises never reject (see start), so racing them loses no failure.
      const settled = await Promise.race(this.running.values());
      this.running.delete(settled.nodeId);
      if (this.itemReportFailure !== undefined) throw this.itemReportFailure;
      await this.settle(settled);
    }
  }

  private async start(nodeId: string): Promise<void> {
    // A task node only computes its task's input here: it starts when a poller claims the task.
    if (this.isPure(nodeId) || this.waitsOutside(nodeId)) {
      this.startNotReported.add(nodeId);
    } else {
      // Promise 5 (docs/architecture.md) for effects: whatever this node reads was reported before it starts (held
      // events go out ahead of this report).
      await this.emit({ kind: 'node_started', nodeId });
    }
    if (this.aborted) {
      this.state.record(nodeId, { status: 'cancelled', tries: 0 });
      return;
    }
    const { executionId, workspaceId, attemptId, input } = this.options;
    const context = {
      executionId,
      workspaceId,
      attemptId,
      nodeId,
      idempotencyKey: `${executionId}:${nodeId}`,
      input: this.state.inputOf(nodeId, input),
      signal: this.controller.signal,
    };
    const node = this.state.node(nodeId);
    const tryOptions = node.type === 'map' ? { ...this.tryOptions, executeNode: this.mapRun(node).tryMap } : this.tryOptions;
    const task = tryNode(node, context, tryOptions).then(
      (outcome): Settlement => ({ nodeId, outcome }),
      (crash: unknown): Settlement => ({ nodeId, crash }),
    );
    this.running.set(nodeId, task);
  }

  private async settle(settled: Settlement): Promise<void> {
    if ('crash' in settled) throw settled.crash;
    const { nodeId, outcome } = settled;
    switch (outcome.status) {
      case 'cancelled':
        this.state.record(nodeId, outcome);
        return;
      case 'succeeded':
        if (this.waitsOutside(nodeId)) {
          await this.wait(nodeId, outcome.output);
          return;
        }
        await this.finish(
          { status: 'succeeded', output: outcome.output, reused: false, tries: outcome.tries },
          {
            kind: 'node_succeeded',
            nodeId,
            output: outcome.output,
          },
        );
        return;
      case 'failed':
        this.firstFailure ??= { nodeId, error: outcome.error };
        await this.finish(outcome, { kind: 'node_failed', nodeId, error: outcome.error });
        return;
      default: {
        const unknown: never = outcome;
        throw new Error(`DagRun: unknown outcome ${JSON.stringify(unknown)}`);
      }
    }
  }

  /**
   * Promise 5 (docs/architecture.md): successors count a node as final only after its final event was reported; for a
   * pure node, only after it was held (acknowledged before any effect follows).
   */
  private async finish(record: Extract<NodeRecord, { status: 'succeeded' | 'failed' }>, event: DagEvent): Promise<void> {
    if (this.aborted) {
      this.state.record(event.nodeId, record);
      return;
    }
    const { hold } = this.options;
    if (hold !== undefined && this.startNotReported.delete(event.nodeId)) {
      hold({ kind: 'node_started', nodeId: event.nodeId });
      hold(event);
    } else {
      await this.emit(event);
    }
    await this.unblock(this.state.complete(event.nodeId, record));
  }

  /**
   * Asks for the node's task (acknowledged before the run goes on: the request travels ahead of
   * anything held) and leaves the node, and everything behind it, pending: the run suspends once
   * nothing else can run, and a resume attempt takes the task's result as the node's.
   */
  private async wait(nodeId: string, input: unknown): Promise<void> {
    this.startNotReported.delete(nodeId);
    this.state.record(nodeId, { status: 'waiting' });
    if (this.aborted) return;
    const kind = waitKindOf(this.state.node(nodeId).type)!;
    await this.emit({ kind: 'node_waiting', nodeId, wait: kind === 'task' || kind === 'subworkflow' ? { kind, input } : { kind } });
    this.waiting.push({ nodeId, kind });
  }

  /** A map node's items run here, not through `executeNode` (see MapRun). */
  private mapRun(node: NodeOfType<'map'>): MapRun {
    return new MapRun(node, {
      ...this.tryOptions,
      completed: this.options.completedItems?.[node.id] ?? {},
      evaluate: this.options.evaluate,
      checkOutput: this.options.checkOutput,
      emit: (event) => this.emitItems(event),
    });
  }

  /**
   * Item facts need no acknowledgement before the run goes on (an item whose end was lost runs
   * again in the next attempt): held when the reporter can hold them, reported otherwise. Never
   * rejects: a failed report aborts the run, which then rejects with it.
   */
  private async emitItems(event: DagEvent): Promise<void> {
    if (this.options.hold !== undefined) return this.options.hold(event);
    try {
      await this.emit(event);
    } catch (error) {
      this.itemReportFailure ??= error;
      this.controller.abort(error);
    }
  }

  /** Decides nodes whose predecessors are all final; skips cascade through their successors. */
  private async unblock(nodeIds: readonly string[]): Promise<void> {
    const queue = [...nodeIds];
    while (queue.length > 0 && !this.aborted) {
      const nodeId = queue.shift()!;
      const decision = this.state.decide(nodeId);
      if (!decision.run) {
        const skipped: DagEvent = { kind: 'node_skipped', nodeId, reason: decision.reason };
        if (this.options.hold !== undefined) this.options.hold(skipped);
        else await this.emit(skipped);
        queue.push(...this.state.complete(nodeId, { status: 'skipped', reason: decision.reason }));
        continue;
      }
      const node = this.state.node(nodeId);
      if (node.type === 'approval') {
        const approval = pendingApproval(this.options.executionId, node, this.state.inputOf(nodeId, this.options.input));
        this.state.record(nodeId, { status: 'awaiting_approval', approval });
        this.approvals.push(approval);
        continue;
      }
      this.enqueue(nodeId);
    }
  }

  private enqueue(nodeId: string): void {
    const rank = this.state.rankOf(nodeId);
    const at = this.ready.findIndex((other) => this.state.rankOf(other) > rank);
    this.ready.splice(at === -1 ? this.ready.length : at, 0, nodeId);
  }

  /** Promise 6 (docs/architecture.md): a failed report stops the run; it is never swallowed. */
  private async emit(event: DagEvent): Promise<void> {
    if (this.aborted) return;
    try {
      await this.options.report(event);
    } catch (cause) {
      throw new DagReportError(event, cause);
    }
  }

  /** Awaits every running node after an abort; returns the crashes found (tasks never reject). */
  private async drain(): Promise<unknown[]> {
    const settlements = await Promise.all(this.running.values());
    this.running.clear();
    return settlements.flatMap((settled) => ('crash' in settled ? [settled.crash] : []));
  }

  private result(): DagResult {
    const base = { output: this.state.leafOutputs(), nodes: this.state.snapshot() };
    if (this.aborted) return { ...base, outcome: 'cancelled' };
    if (this.firstFailure) {
      return { ...base, outcome: 'failed', error: this.firstFailure.error, failedNodeId: this.firstFailure.nodeId };
    }
    if (this.approvals.length > 0 || this.waiting.length > 0) {
      const of = (kind: WaitKind) => this.waiting.filter((w) => w.kind === kind).map((w) => w.nodeId);
      return {
        ...base,
        outcome: 'suspended',
        approvals: [...this.approvals],
        // Subworkflow nodes are listed with the task nodes: each waits for a fact the control plane records.
        tasks: [...of('task'), ...of('subworkflow')],
        timers: of('timer'),
        signals: of('signal'),
      };
    }
    return { ...base, outcome: 'succeeded' };
  }
}

/**
 * Waits for every promise, then rethrows the first failure: no report is left in flight (and no
 * node launched behind the caller's back) when the run stops, and none goes unchecked.
 */
async function settleAll(promises: readonly Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}
