import type { ExecutionError } from '../../executions/domain/execution.events.js';
import type { WorkflowGraph, WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';

/** A node's input: the execution input, plus the outputs of the predecessors that succeeded. */
export interface NodeInput {
  readonly input: Record<string, unknown>;
  /** Keyed by predecessor id. A skipped or failed predecessor has no entry ("never produced"). */
  readonly nodes: Readonly<Record<string, unknown>>;
  /** For the node a `map` runs per item: the element of the items array, and its position in it. */
  readonly item?: unknown;
  readonly index?: number;
}

/** What a node type gets besides its own configuration. */
export interface NodeContext {
  readonly executionId: string;
  /** The execution's workspace: shared resources (the interpreter threads) are divided between workspaces. */
  readonly workspaceId: string;
  readonly attemptId: string;
  readonly nodeId: string;
  /** `<executionId>:<nodeId>`: the same in every try and every attempt of this node. */
  readonly idempotencyKey: string;
  readonly input: NodeInput;
  /** Aborted when the run is cancelled or loses its lease: stop promptly and reject. */
  readonly signal: AbortSignal;
  /**
   * Aborted once this node, if it still waits for a shared resource (an interpreter thread), should
   * never start: a map's items once the map failed. A node that drops its work then rejects with
   * `NodeNotStartedError`; work already begun goes on.
   */
  readonly dropIfWaiting?: AbortSignal;
  /** 1 for the first try of this node in this attempt. */
  readonly tryNumber: number;
  /** The attempt's secrets, resolved on first use (docs/architecture.md, "Secrets"); absent when the run has none to give. */
  readonly secrets?: SecretSource;
}

/** Where a node type that may reference secrets gets their values: asked once per attempt, when the first such node runs. */
export interface SecretSource {
  /** Every secret the graph references, by name; rejects with a NodeError when they cannot be had. */
  values(): Promise<ReadonlyMap<string, string>>;
}

/**
 * Runs one node type: resolves with its output (JSON), rejects with a NodeError on failure.
 * Must reject promptly once `ctx.signal` is aborted.
 */
export type ExecuteNode = (node: WorkflowNode, ctx: NodeContext) => Promise<unknown>;

/** A node event the runner hands to `report`; the worker publishes it as a result message. */
export type DagEvent =
  | { readonly kind: 'node_started'; readonly nodeId: string }
  | { readonly kind: 'node_succeeded'; readonly nodeId: string; readonly output: unknown }
  | { readonly kind: 'node_failed'; readonly nodeId: string; readonly error: ExecutionError }
  | { readonly kind: 'node_skipped'; readonly nodeId: string; readonly reason: string }
  /**
   * A task node asks for its task (a subworkflow node for its child), with this input; a `delay`
   * node for its timer; a `wait_signal` node for a signal. The attempt then waits for it (suspends).
   */
  | {
      readonly kind: 'node_waiting';
      readonly nodeId: string;
      readonly wait: { readonly kind: 'task' | 'subworkflow'; readonly input: unknown } | { readonly kind: 'timer' | 'signal' };
    }
  /** Items of a running map that started, succeeded or failed (past their retries) since the last such event. */
  | ({ readonly kind: 'map_items'; readonly nodeId: string } & MapItemFacts);

/** A batch of facts about the items of one map node. */
export interface MapItemFacts {
  readonly started: readonly number[];
  readonly completed: readonly { readonly index: number; readonly output: unknown }[];
  readonly failed: readonly { readonly index: number; readonly error: ExecutionError }[];
}

/** Evaluates a JSONata expression over a value (the transform sandbox); rejects with a NodeError. */
export type Evaluate = (expression: string, input: unknown, signal: AbortSignal) => Promise<unknown>;

/** Resolves once the event is durably handed over (e.g. acked by the broker). */
export type ReportDagEvent = (event: DagEvent) => Promise<void>;

/** Waits `ms`, rejecting as soon as `signal` aborts. Injected so tests never wait for real. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/**
 * An approval node that became runnable. The runner never executes approvals: it stops there
 * and hands this to the caller, who records it and waits for a human decision.
 */
export interface PendingApproval {
  readonly nodeId: string;
  /** The node's configured `action` (null when none). */
  readonly action: unknown;
  /** Outputs of the approval node's succeeded predecessors: the data the decision is about. */
  readonly inputs: Readonly<Record<string, unknown>>;
  /** sha256 binding a decision to this execution, node, action and inputs (`approvalActionDigest`). */
  readonly actionDigest: string;
}

/** Where each node ended in this run. */
export type NodeRecord =
  | { readonly status: 'succeeded'; readonly output: unknown; readonly reused: boolean; readonly tries: number }
  | { readonly status: 'failed'; readonly error: ExecutionError; readonly tries: number }
  | { readonly status: 'skipped'; readonly reason: string }
  | { readonly status: 'awaiting_approval'; readonly approval: PendingApproval }
  /** A task node whose task was asked for: its result comes from outside the run. */
  | { readonly status: 'waiting' }
  /** Was running (or waiting to retry) when the run was aborted. */
  | { readonly status: 'cancelled'; readonly tries: number }
  /** Never became runnable: the run stopped first, or it waits behind an approval. */
  | { readonly status: 'pending' };

interface DagResultBase {
  /** Outputs of the leaf nodes (no successors) that succeeded, keyed by node id. */
  readonly output: Readonly<Record<string, unknown>>;
  readonly nodes: Readonly<Record<string, NodeRecord>>;
}

/**
 * How one attempt's run of the graph ended. Precedence: cancelled > failed > suspended >
 * succeeded. A failure to report an event is not an outcome: `runDag` rejects with
 * `DagReportError` instead.
 */
export type DagResult =
  | (DagResultBase & { readonly outcome: 'succeeded' })
  | (DagResultBase & { readonly outcome: 'failed'; readonly error: ExecutionError; readonly failedNodeId: string })
  | (DagResultBase & { readonly outcome: 'cancelled' })
  | (DagResultBase & {
      readonly outcome: 'suspended';
      readonly approvals: readonly PendingApproval[];
      /** Task nodes waiting for their tasks, in the order they were reached. */
      readonly tasks: readonly string[];
      /** `delay` nodes waiting for their timers, and `wait_signal` nodes for a signal. */
      readonly timers: readonly string[];
      readonly signals: readonly string[];
    });

export interface RunDagOptions {
  readonly graph: WorkflowGraph;
  readonly input: Record<string, unknown>;
  /** Outputs of nodes that succeeded in an earlier attempt: reused, never run or reported again. */
  readonly completedNodes?: Readonly<Record<string, unknown>>;
  /**
   * Nodes whose wait ended in failure earlier in this try (a task that failed past its retries):
   * final and failed from the start, never run or reported again; the run's outcome is `failed`.
   */
  readonly failedNodes?: Readonly<Record<string, ExecutionError>>;
  readonly executionId: string;
  readonly workspaceId: string;
  readonly attemptId: string;
  /** Abort to cancel the run (cancellation requested, or the lease was lost). */
  readonly signal: AbortSignal;
  /** Most nodes running at once; at least 1. */
  readonly concurrency?: number;
  readonly executeNode: ExecuteNode;
  readonly report: ReportDagEvent;
  /**
   * Nodes with no effect outside the run (noop, transform, fail): with `hold`, their start and
   * result are held instead of reported (their start no longer precedes their run). Every other
   * node runs only once its `node_started` was acknowledged. Default: no node is pure.
   */
  readonly isPure?: (node: WorkflowNode) => boolean;
  /**
   * Takes the events of pure nodes and of skipped nodes, which need no acknowledgement before the
   * run goes on: the reporter must send them ahead of the next `report` (in the same
   * acknowledgement) or with the attempt's terminal result. Without it, every event is reported.
   */
  readonly hold?: (event: DagEvent) => void;
  /** Backoff between node tries; real timers by default. */
  readonly sleep?: Sleep;
  /** Jitter source in [0, 1); Math.random by default. */
  readonly random?: () => number;
  /**
   * Outputs of map items that finished in earlier attempts, by map node id, then by item index:
   * reused, never run or reported again.
   */
  readonly completedItems?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Evaluates a map's `items` expression; without it, a map node fails `map_unavailable`. */
  readonly evaluate?: Evaluate;
  /** Checks a map's whole output before it is reported (throws a NodeError when it is too large). */
  readonly checkOutput?: (nodeId: string, output: unknown) => void;
}
