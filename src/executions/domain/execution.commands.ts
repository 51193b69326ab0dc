import type { CommandMetadata } from '../../core/decider.js';
import type { ChildEnd, ExecutionError, ParentLink, ScheduledBy, WorkflowSnapshot } from './execution.events.js';

/** Commands on one execution stream. Ids, time and jitter arrive in the command, never made here. */
export type StartExecution = {
  type: 'StartExecution';
  data: {
    executionId: string;
    workspaceId: string;
    workflow: WorkflowSnapshot;
    input: Record<string, unknown>;
    idempotency: { key: string; fingerprint: string } | null;
    attemptId: string;
    /** Set when the workspace bounds its concurrent executions: the first attempt waits for a slot. */
    waitFor?: WaitingFor | null;
    /** Set when a schedule fire starts it: the execution id is derived from the fire, and a second start of it is a replay. */
    scheduledBy?: ScheduledBy | null;
    /** Set when a `subworkflow` node starts it: the execution id is derived from the parent, and a second start of it is a replay. */
    parent?: ParentLink | null;
  };
  metadata: CommandMetadata;
};

/** What a run may wait for before its first attempt is scheduled. */
export type WaitingFor = 'workspace_quota';

/** The admission granted the run a slot: schedule the attempt it waits with (a no-op when it waits no more). */
export type AdmitExecution = {
  type: 'AdmitExecution';
  data: { attemptId: string };
  metadata: CommandMetadata;
};

export type ClaimAttempt = {
  type: 'ClaimAttempt';
  data: { attemptId: string; workerId: string };
  metadata: CommandMetadata;
};

/** What proves a worker holds the current claim (promise 3, docs/architecture.md). */
export interface Fence {
  attemptId: string;
  workerId: string;
  fencingToken: number;
}

export type Heartbeat = { type: 'Heartbeat'; data: Fence; metadata: CommandMetadata };

export type NodeResultKind = 'node_started' | 'node_succeeded' | 'node_failed' | 'node_skipped' | 'node_waiting';

/**
 * What a node that waits outside the engine asks for: for a task node, its task with this input;
 * for a `subworkflow` node, its child with this input; for a `delay` node, its timer; for a
 * `wait_signal` node, a signal (the decider reads the due time, the signal's name and time limit
 * from the execution's graph snapshot).
 */
export type NodeWaitRequest =
  { kind: 'task'; input: unknown } | { kind: 'subworkflow'; input: unknown } | { kind: 'timer' } | { kind: 'signal' };

export type RecordNodeResult = {
  type: 'RecordNodeResult';
  data: Fence & {
    kind: NodeResultKind;
    nodeId: string;
    output?: unknown;
    error?: ExecutionError;
    reason?: string;
    /** For `node_waiting`: what the node waits for. */
    wait?: NodeWaitRequest;
  };
  metadata: CommandMetadata;
};

/** Facts about the items of a running map node, batched by the worker (docs/api.md, "Control flow"). */
export type RecordMapItems = {
  type: 'RecordMapItems';
  data: Fence & {
    nodeId: string;
    started: number[];
    completed: { index: number; output: unknown }[];
    failed: { index: number; error: ExecutionError }[];
  };
  metadata: CommandMetadata;
};

export type AttemptOutcome = 'succeeded' | 'failed' | 'cancelled' | 'suspended';

export type CompleteAttempt = {
  type: 'CompleteAttempt';
  data: Fence & {
    outcome: AttemptOutcome;
    output?: unknown;
    error?: ExecutionError;
    /** For outcome `suspended`: the approval node reached and the exact action it asks to approve. */
    approval?: { nodeId: string; action: unknown };
    /** For outcome `suspended`: the task nodes waiting for their tasks, and the subworkflow nodes waiting for their children. */
    tasks?: string[];
    /** For outcome `suspended`: the `delay` nodes waiting for their timers. */
    timers?: string[];
    /** For outcome `suspended`: the `wait_signal` nodes waiting for a signal. */
    signals?: string[];
    /** Id for the retry attempt, used only if the policy schedules one. */
    nextAttemptId: string;
    /** Uniform in [0, 1): spreads retry backoff. */
    jitter: number;
  };
  metadata: CommandMetadata;
};

export type TimeOutAttempt = {
  type: 'TimeOutAttempt';
  data: { attemptId: string; nextAttemptId: string; jitter: number };
  metadata: CommandMetadata;
};

/** The watchdog's verdict that the execution ran past `timeouts.executionMs`; the decider checks it. */
export type TimeOutExecution = {
  type: 'TimeOutExecution';
  data: Record<string, never>;
  metadata: CommandMetadata;
};

export type RequestCancel = {
  type: 'RequestCancel';
  data: { reason: string | null };
  metadata: CommandMetadata;
};

export type RequestRedrive = {
  type: 'RequestRedrive';
  data: { redriveId: string; idempotencyKey: string; fingerprint: string; attemptId: string; waitFor?: WaitingFor | null };
  metadata: CommandMetadata;
};

export type DecideApproval = {
  type: 'DecideApproval';
  data: {
    nodeId: string;
    decision: 'approve' | 'reject';
    /** Digest of the action the person saw; must still be the pending one. */
    actionDigest: string;
    comment: string | null;
    /** Id of the resume attempt scheduled by an approval. */
    attemptId: string;
  };
  metadata: CommandMetadata;
};

/** A poller of the task's queue takes it (the poll's claim). */
export type ClaimTask = { type: 'ClaimTask'; data: { taskId: string; workerId: string }; metadata: CommandMetadata };

/** What proves a poller holds the current claim of a task. */
export interface TaskFence {
  taskId: string;
  workerId: string;
  fencingToken: number;
}

export type HeartbeatTask = { type: 'HeartbeatTask'; data: TaskFence & { progress?: unknown }; metadata: CommandMetadata };

export type CompleteTask = {
  type: 'CompleteTask';
  data: TaskFence & {
    outcome: 'succeeded' | 'failed';
    output?: unknown;
    error?: ExecutionError;
    /** Id of the resume attempt, used only if the task's end lets a suspended execution go on. */
    nextAttemptId: string;
    /** Uniform in [0, 1): spreads the backoff of a retried task. */
    jitter: number;
    /**
     * Also claim for the same worker, in the same append, the oldest due task of this execution
     * on the completed task's queue (typically a successor this completion schedules); a number
     * claims up to that many, oldest first.
     */
    claimNext?: boolean | number;
  };
  metadata: CommandMetadata;
};

/** The watchdog's verdict that a claimed task's lease or timeout passed; the decider checks it. */
export type TimeOutTask = {
  type: 'TimeOutTask';
  data: { taskId: string; nextAttemptId: string; jitter: number };
  metadata: CommandMetadata;
};

/** The subworkflow manager saw a child execution end: the parent records it, and the node's result if it still waits. */
export type RecordChildResult = {
  type: 'RecordChildResult';
  data: {
    childExecutionId: string;
    outcome: ChildEnd;
    output?: unknown;
    error?: ExecutionError;
    /** The child never started, for a reason of the node's own (its tree is full): the node fails with this error as it is. */
    nodeError?: ExecutionError;
    /** Id of the resume attempt, used only if the child's end lets a suspended parent go on. */
    nextAttemptId: string;
  };
  metadata: CommandMetadata;
};

/** The timer role found a timer due: it fires, once; the decider checks it is due and still live. */
export type FireTimer = {
  type: 'FireTimer';
  data: { timerId: string; nextAttemptId: string; jitter: number };
  metadata: CommandMetadata;
};

/** An operator sends a signal to the execution (kept until a `wait_signal` node of its name takes it). */
export type SendSignal = {
  type: 'SendSignal';
  data: {
    signalId: string;
    name: string;
    payload: unknown;
    idempotency: { key: string; fingerprint: string } | null;
    /** Id of the resume attempt, used only if the signal lets a suspended execution go on. */
    nextAttemptId: string;
  };
  metadata: CommandMetadata;
};

export type ExecutionCommand =
  | RecordChildResult
  | FireTimer
  | SendSignal
  | ClaimTask
  | HeartbeatTask
  | CompleteTask
  | TimeOutTask
  | StartExecution
  | AdmitExecution
  | ClaimAttempt
  | Heartbeat
  | RecordNodeResult
  | RecordMapItems
  | CompleteAttempt
  | TimeOutAttempt
  | TimeOutExecution
  | RequestCancel
  | RequestRedrive
  | DecideApproval;
