import type {
  AttemptReason,
  ChildEnd,
  ExecutionError,
  ExecutionEvent,
  ParentLink,
  ScheduledBy,
  Wait,
  WorkflowSnapshot,
} from './execution.events.js';
import { eventBytes } from './json-bytes.js';

export type EndedAttemptStatus = 'suspended' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled';
export type AttemptStatus = 'queued' | 'running' | EndedAttemptStatus;

interface AttemptFields {
  attemptId: string;
  attemptNumber: number;
  reason: AttemptReason;
  scheduledAt: string;
  notBefore: string;
  queueDeadline: string;
}

/** Scheduled, waiting in the queue for a worker's claim. */
export interface QueuedAttempt extends AttemptFields {
  status: 'queued';
  workerId: null;
  fencingToken: null;
  claimedAt: null;
  leaseExpiresAt: null;
  endedAt: null;
}

/** Claimed: one worker holds it, fenced by its token, until its lease expires. */
export interface RunningAttempt extends AttemptFields {
  status: 'running';
  workerId: string;
  fencingToken: number;
  claimedAt: string;
  leaseExpiresAt: string;
  endedAt: null;
}

/** Over, whether or not it was ever claimed (a queued attempt may be cancelled or time out). */
export interface EndedAttempt extends AttemptFields {
  status: EndedAttemptStatus;
  workerId: string | null;
  fencingToken: number | null;
  claimedAt: string | null;
  leaseExpiresAt: string | null;
  endedAt: string;
  output?: unknown;
  error?: ExecutionError;
}

export type Attempt = QueuedAttempt | RunningAttempt | EndedAttempt;

/** `waiting`: its task is scheduled or claimed (see `tasks`); `cancelled`: its task was cancelled with the execution. */
export type NodeStatus = 'running' | 'awaiting_approval' | 'waiting' | 'succeeded' | 'failed' | 'skipped' | 'cancelled';

export interface NodeRecord {
  nodeId: string;
  attemptId: string;
  status: NodeStatus;
  startedAt: string | null;
  endedAt: string | null;
  output?: unknown;
  error?: ExecutionError;
  reason?: string;
}

export type TaskStatus = 'scheduled' | 'claimed' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled';

/** One task of a task node: handed to a poller of its queue, run by the user's own code. */
export interface TaskRecord {
  taskId: string;
  nodeId: string;
  /** The attempt whose run of the graph asked for it (or for the task it retries). */
  attemptId: string;
  queue: string;
  input: unknown;
  /** Tries of the node's current run, this one included: what the node's retry policy counts. */
  taskAttempt: number;
  timeoutMs: number | null;
  heartbeatTimeoutMs: number;
  notBefore: string;
  scheduledAt: string;
  status: TaskStatus;
  workerId: string | null;
  fencingToken: number | null;
  claimedAt: string | null;
  leaseExpiresAt: string | null;
  timeoutAt: string | null;
  endedAt: string | null;
  /** The latest progress entries its heartbeats reported, oldest first (as many as the heartbeat said to keep). */
  recentProgress?: TaskProgress[];
  output?: unknown;
  error?: ExecutionError;
}

/** One progress entry of a task, as a heartbeat reported it. */
export interface TaskProgress {
  at: string;
  progress: unknown;
}

/** A child execution a `subworkflow` node started; `running` until its end is recorded here. */
export interface ChildRecord {
  childExecutionId: string;
  nodeId: string;
  /** The attempt whose run of the graph asked for it. */
  attemptId: string;
  workflow: string;
  revision: number | null;
  status: 'running' | ChildEnd;
  startedAt: string;
  endedAt: string | null;
}

export type TimerStatus = 'scheduled' | 'fired' | 'cancelled';

/** A durable timer: a `delay` node's wait, or the time limit of a `wait_signal` node's wait. */
export interface TimerRecord {
  timerId: string;
  nodeId: string;
  attemptId: string;
  purpose: 'delay' | 'signal_timeout';
  dueAt: string;
  scheduledAt: string;
  status: TimerStatus;
  firedAt: string | null;
  lateByMs: number | null;
  endedAt: string | null;
}

/** A signal sent to the execution: kept until one `wait_signal` node of its name takes it. */
export interface SignalRecord {
  signalId: string;
  name: string;
  payload: unknown;
  idempotency: { key: string; fingerprint: string } | null;
  sentBy: string;
  receivedAt: string;
  /** The node that took it; null while it is kept. */
  deliveredTo: string | null;
}

/** A `wait_signal` node's current (or last) wait. */
export interface SignalWaitRecord {
  nodeId: string;
  attemptId: string;
  name: string;
  tries: number;
  timerId: string | null;
  status: 'waiting' | 'delivered' | 'timed_out' | 'cancelled';
  since: string;
  signalId: string | null;
}

/** The attempt a run waits to have scheduled until its workspace's quota grants it a slot. */
export interface AwaitedSlot {
  attemptId: string;
  attemptNumber: number;
  reason: 'start' | 'redrive' | 'resume';
  waitingFor: 'workspace_quota';
  since: string;
}

export interface RedriveRecord {
  redriveId: string;
  fingerprint: string;
  attemptId: string;
  attemptNumber: number;
}

interface ExecutionFields {
  executionId: string;
  workspaceId: string;
  workflow: WorkflowSnapshot;
  input: Record<string, unknown>;
  startIdempotency: { key: string; fingerprint: string } | null;
  /** The schedule fire that started it; null (or absent, in documents folded before schedules) otherwise. */
  scheduledBy: ScheduledBy | null;
  /** The execution and node that started it as a child; null (or absent, in older documents) otherwise. */
  parent?: ParentLink | null;
  /** Child executions its `subworkflow` nodes started, by id (absent in older documents). */
  children?: Record<string, ChildRecord>;
  startedBy: string;
  startedAt: string;
  updatedAt: string;
  attempts: Attempt[];
  /** Attempts since the start or the last redrive: what the retry policy counts. */
  attemptsInRun: number;
  nodes: Record<string, NodeRecord>;
  /** Outputs of the map items that succeeded, by map node id, then item index: a later attempt reuses them. */
  mapItems: Record<string, Record<string, unknown>>;
  cancelRequest: { reason: string | null; requestedBy: string; at: string } | null;
  redrives: Record<string, RedriveRecord>;
  /** The approval the execution waits for, bound to the digest of its action. */
  pendingApproval: { nodeId: string; attemptId: string; action: unknown; actionDigest: string } | null;
  /** Last decision per approval node: a repeated identical decision is a replay. */
  approvalDecisions: Record<string, { decision: 'approve' | 'reject'; actionDigest: string }>;
  /** Every task ever scheduled for the execution's task nodes, by task id. */
  tasks: Record<string, TaskRecord>;
  /** Every durable timer of the execution, by timer id (absent in documents folded before timers). */
  timers: Record<string, TimerRecord>;
  /** Every signal sent to the execution, in the order received. */
  signals: SignalRecord[];
  /** The wait of each `wait_signal` node reached, by node id. */
  signalWaits: Record<string, SignalWaitRecord>;
  /** What the last suspended attempt waited for; empty while nothing is suspended. */
  waits: Wait[];
  /** Last fencing token handed out (attempts and tasks alike); every claim gets a larger one. */
  lastFencingToken: number;
  /** The run waits for a quota slot before its first attempt is scheduled; null otherwise. */
  awaitingSlot: AwaitedSlot | null;
  /** The attempt whose admission took the current run's quota slot; null when the run took none. */
  slotAttemptId: string | null;
  /** The run gave its slot back while it waits for its children only: it goes on after a slot again (absent in older documents). */
  slotYielded?: boolean;
  /** When the current run began (the start, or the last redrive): its execution deadline counts from here. */
  runStartedAt: string;
  endedAt: string | null;
  /** UTF-8 bytes of its events' data as JSON, together: what its history bound counts (absent in older documents). */
  historyBytes?: number;
  output?: unknown;
  error?: ExecutionError;
  endReason?: string | null;
}

/** `waiting`: the attempt suspended and every runnable node waits for a task (none for an approval). */
export type ActiveStatus = 'queued' | 'running' | 'awaiting_approval' | 'waiting';
export type FinalStatus = 'succeeded' | 'failed' | 'timed_out' | 'cancelled';
export type ExecutionStatus = ActiveStatus | FinalStatus;

export type ExecutionState =
  { status: 'not_started' } | (ExecutionFields & { status: ActiveStatus }) | (ExecutionFields & { status: FinalStatus });

export type StartedExecution = Exclude<ExecutionState, { status: 'not_started' }>;

export const FINAL_STATUSES: readonly FinalStatus[] = ['succeeded', 'failed', 'timed_out', 'cancelled'];

export function isFinal(state: ExecutionState): state is ExecutionFields & { status: FinalStatus } {
  return (FINAL_STATUSES as readonly string[]).includes(state.status);
}

export const initialState = (): ExecutionState => ({ status: 'not_started' });

/**
 * `state` with its fields in the order `evolve` builds them (ExecutionStarted's), for a state that
 * comes from elsewhere: `jsonb` gives an object's keys back sorted by length. Folding states of
 * two key orders in one process gives every spread in `evolve` a second shape, and they stay
 * several times slower for every caller; a state read back from a read model goes through here.
 */
export function inFoldOrder(state: StartedExecution): StartedExecution {
  const ordered: StartedExecution = {
    status: state.status,
    executionId: state.executionId,
    workspaceId: state.workspaceId,
    workflow: state.workflow,
    input: state.input,
    startIdempotency: state.startIdempotency,
    scheduledBy: state.scheduledBy,
    parent: state.parent,
    children: state.children,
    startedBy: state.startedBy,
    startedAt: state.startedAt,
    updatedAt: state.updatedAt,
    attempts: state.attempts,
    attemptsInRun: state.attemptsInRun,
    nodes: state.nodes,
    mapItems: state.mapItems,
    cancelRequest: state.cancelRequest,
    redrives: state.redrives,
    pendingApproval: state.pendingApproval,
    approvalDecisions: state.approvalDecisions,
    tasks: state.tasks,
    timers: state.timers,
    signals: state.signals,
    signalWaits: state.signalWaits,
    waits: state.waits,
    lastFencingToken: state.lastFencingToken,
    awaitingSlot: state.awaitingSlot,
    slotAttemptId: state.slotAttemptId,
    runStartedAt: state.runStartedAt,
    endedAt: state.endedAt,
    historyBytes: state.historyBytes,
  };
  // What later events add (an end's `output`, `error`, `endReason`) comes after, as evolve adds it.
  const later = Object.entries(state).filter(([key]) => !Object.hasOwn(ordered, key));
  return later.length === 0 ? ordered : { ...ordered, ...Object.fromEntries(later) };
}

/** The latest attempt; none only between ExecutionStarted and the AttemptScheduled appended with it. */
export function currentAttempt(state: StartedExecution): Attempt | undefined {
  return state.attempts[state.attempts.length - 1];
}

/**
 * The attempt a run's results are recorded under while no attempt was ever scheduled: when the
 * first runnable nodes are all task nodes, their tasks are scheduled with the start (or the
 * admission) under the id reserved for attempt 1, and that attempt is scheduled only if the
 * worker is needed later (docs/architecture.md, "Waiting steps"). Undefined once an attempt exists.
 */
export function unscheduledFirstAttemptId(state: StartedExecution): string | undefined {
  if (state.attempts.length > 0) return undefined;
  for (const task of Object.values(state.tasks)) return task.attemptId;
  return undefined;
}

/** Attempts are numbered 1, 2, 3, … in the order they are scheduled. */
export function nextAttemptNumber(state: StartedExecution): number {
  return (currentAttempt(state)?.attemptNumber ?? 0) + 1;
}

function withAttempt(state: StartedExecution, attemptId: string, change: (a: Attempt) => Attempt): Attempt[] {
  return state.attempts.map((a) => (a.attemptId === attemptId ? change(a) : a));
}

/**
 * `evolve`, also counting each event's bytes into `historyBytes`: the fold the decider decides on,
 * so that it knows how full the history is (promise 13). Read models fold with `evolve` and do
 * not pay for measuring every event.
 */
export function evolveCountingHistory(state: ExecutionState, event: ExecutionEvent): ExecutionState {
  const next = evolve(state, event);
  if (next.status === 'not_started') return next;
  const historyBytes = (state.status === 'not_started' ? 0 : (state.historyBytes ?? 0)) + eventBytes(event);
  // A fact folded into a new object takes its count in place: a second copy of the state per event costs more.
  if (next === state) return { ...next, historyBytes };
  next.historyBytes = historyBytes;
  return next;
}

/** Folds one fact into state. Never reads a clock or makes ids: everything comes from the event. */
export function evolve(state: ExecutionState, event: ExecutionEvent): ExecutionState {
  if (event.type === 'ExecutionStarted') {
    const d = event.data;
    return {
      status: 'queued',
      executionId: d.executionId,
      workspaceId: d.workspaceId,
      workflow: d.workflow,
      input: d.input,
      startIdempotency: d.idempotency,
      scheduledBy: d.scheduledBy ?? null,
      parent: d.parent ?? null,
      children: {},
      startedBy: d.startedBy,
      startedAt: d.startedAt,
      updatedAt: d.startedAt,
      attempts: [],
      attemptsInRun: 0,
      nodes: {},
      mapItems: {},
      cancelRequest: null,
      redrives: {},
      pendingApproval: null,
      approvalDecisions: {},
      tasks: {},
      timers: {},
      signals: [],
      signalWaits: {},
      waits: [],
      lastFencingToken: 0,
      awaitingSlot: null,
      slotAttemptId: null,
      runStartedAt: d.startedAt,
      endedAt: null,
      historyBytes: undefined,
    };
  }
  if (state.status === 'not_started') return state;
  const s: StartedExecution = state;
  switch (event.type) {
    case 'AttemptScheduled': {
      const d = event.data;
      const attempt: QueuedAttempt = {
        attemptId: d.attemptId,
        attemptNumber: d.attemptNumber,
        reason: d.reason,
        status: 'queued',
        scheduledAt: d.scheduledAt,
        notBefore: d.notBefore,
        queueDeadline: d.queueDeadline,
        workerId: null,
        fencingToken: null,
        claimedAt: null,
        leaseExpiresAt: null,
        endedAt: null,
      };
      // A resume after an approval continues the same try: it does not spend the retry budget.
      const spent = d.reason === 'resume' ? 0 : 1;
      // Scheduling the attempt a run waited with is its admission: the run now holds its slot.
      const admitted = s.awaitingSlot?.attemptId === d.attemptId;
      return {
        ...s,
        status: 'queued',
        waits: [],
        attempts: [...s.attempts, attempt],
        attemptsInRun: s.attemptsInRun + spent,
        updatedAt: d.scheduledAt,
        ...(admitted ? { awaitingSlot: null, slotAttemptId: d.attemptId } : {}),
      };
    }
    case 'ExecutionAwaitingSlot': {
      const d = event.data;
      return {
        ...s,
        status: 'queued',
        updatedAt: d.at,
        awaitingSlot: { attemptId: d.attemptId, attemptNumber: d.attemptNumber, reason: d.reason, waitingFor: d.waitingFor, since: d.at },
        slotAttemptId: null,
        slotYielded: false,
      };
    }
    case 'SlotYielded':
      return { ...s, updatedAt: event.data.at, slotAttemptId: null, slotYielded: true };
    case 'AttemptClaimed': {
      const d = event.data;
      return {
        ...s,
        status: 'running',
        lastFencingToken: d.fencingToken,
        updatedAt: d.claimedAt,
        attempts: withAttempt(s, d.attemptId, (a): RunningAttempt => ({
          ...a,
          status: 'running',
          workerId: d.workerId,
          fencingToken: d.fencingToken,
          claimedAt: d.claimedAt,
          leaseExpiresAt: d.leaseExpiresAt,
          endedAt: null,
        })),
      };
    }
    case 'LeaseExtended':
      return {
        ...s,
        updatedAt: event.data.extendedAt,
        attempts: withAttempt(s, event.data.attemptId, (a) =>
          a.status === 'running' ? { ...a, leaseExpiresAt: event.data.leaseExpiresAt } : a,
        ),
      };
    case 'NodeStarted':
    case 'NodeSucceeded':
    case 'NodeFailed':
    case 'NodeSkipped':
      return { ...s, updatedAt: event.data.at, nodes: { ...s.nodes, [event.data.nodeId]: nodeRecord(s.nodes[event.data.nodeId], event) } };
    case 'MapItemsStarted':
    case 'MapItemsFailed':
      return { ...s, updatedAt: event.data.at };
    case 'MapItemsCompleted': {
      const d = event.data;
      const mapItems = s.mapItems ?? {};
      const items = { ...mapItems[d.nodeId] };
      for (const { index, output } of d.items) items[index] = output;
      return { ...s, updatedAt: d.at, mapItems: { ...mapItems, [d.nodeId]: items } };
    }
    case 'NodeAwaitingApproval': {
      const d = event.data;
      return {
        ...s,
        updatedAt: d.at,
        pendingApproval: { nodeId: d.nodeId, attemptId: d.attemptId, action: d.action, actionDigest: d.actionDigest },
        nodes: {
          ...s.nodes,
          [d.nodeId]: {
            nodeId: d.nodeId,
            attemptId: d.attemptId,
            status: 'awaiting_approval',
            startedAt: d.at,
            endedAt: null,
            output: { action: d.action, actionDigest: d.actionDigest },
          },
        },
      };
    }
    case 'AttemptSuspended': {
      const waits = event.data.waits;
      const status = waits.some((w) => w.kind === 'approval') && s.pendingApproval !== null ? 'awaiting_approval' : 'waiting';
      return { ...endAttempt(s, event.data.attemptId, 'suspended', event.data.at, {}), status, waits };
    }
    case 'TaskScheduled': {
      const d = event.data;
      const task: TaskRecord = {
        taskId: d.taskId,
        nodeId: d.nodeId,
        attemptId: d.attemptId,
        queue: d.queue,
        input: d.input,
        taskAttempt: d.taskAttempt,
        timeoutMs: d.timeoutMs,
        heartbeatTimeoutMs: d.heartbeatTimeoutMs,
        notBefore: d.notBefore,
        scheduledAt: d.scheduledAt,
        status: 'scheduled',
        workerId: null,
        fencingToken: null,
        claimedAt: null,
        leaseExpiresAt: null,
        timeoutAt: null,
        endedAt: null,
      };
      const previous = s.nodes[d.nodeId];
      const continues = previous?.status === 'waiting';
      const node: NodeRecord = {
        nodeId: d.nodeId,
        attemptId: continues ? previous.attemptId : d.attemptId,
        status: 'waiting',
        startedAt: continues ? previous.startedAt : d.scheduledAt,
        endedAt: null,
      };
      // A task the control plane scheduled while the execution is suspended is one more wait of it.
      // So is a root task scheduled with the start or the admission: no attempt runs, the execution waits.
      const withoutAttempt = s.attempts.length === 0;
      const suspended = s.status === 'waiting' || s.status === 'awaiting_approval' || withoutAttempt;
      const waits =
        suspended && !s.waits.some((w) => w.nodeId === d.nodeId) ? [...s.waits, { nodeId: d.nodeId, kind: 'task' as const }] : s.waits;
      // Root tasks scheduled by the admission take the run's slot, as the first attempt would have.
      const admitted = s.awaitingSlot?.attemptId === d.attemptId;
      return {
        ...s,
        ...(withoutAttempt ? { status: 'waiting' as const } : {}),
        ...(admitted ? { awaitingSlot: null, slotAttemptId: d.attemptId } : {}),
        updatedAt: d.scheduledAt,
        waits,
        tasks: { ...s.tasks, [d.taskId]: task },
        nodes: { ...s.nodes, [d.nodeId]: node },
      };
    }
    case 'TaskClaimed': {
      const d = event.data;
      return {
        ...s,
        updatedAt: d.claimedAt,
        lastFencingToken: Math.max(s.lastFencingToken, d.fencingToken),
        tasks: withTask(s, d.taskId, (t) => ({
          ...t,
          status: 'claimed',
          workerId: d.workerId,
          fencingToken: d.fencingToken,
          claimedAt: d.claimedAt,
          leaseExpiresAt: d.leaseExpiresAt,
          timeoutAt: d.timeoutAt,
        })),
      };
    }
    case 'TaskLeaseExtended': {
      const d = event.data;
      return {
        ...s,
        updatedAt: d.at,
        tasks: withTask(s, d.taskId, (t) => ({
          ...t,
          leaseExpiresAt: d.leaseExpiresAt,
          // Events recorded before the bound name no count: they kept the last entry only.
          ...(d.progress !== undefined
            ? { recentProgress: [...(t.recentProgress ?? []), { at: d.at, progress: d.progress }].slice(-(d.progressKept ?? 1)) }
            : {}),
        })),
      };
    }
    case 'TaskSucceeded':
      return {
        ...s,
        updatedAt: event.data.at,
        tasks: withTask(s, event.data.taskId, (t) => ({ ...t, status: 'succeeded', endedAt: event.data.at, output: event.data.output })),
      };
    case 'TaskFailed':
      return {
        ...s,
        updatedAt: event.data.at,
        tasks: withTask(s, event.data.taskId, (t) => ({ ...t, status: 'failed', endedAt: event.data.at, error: event.data.error })),
      };
    case 'TaskTimedOut':
      return {
        ...s,
        updatedAt: event.data.at,
        tasks: withTask(s, event.data.taskId, (t) => ({ ...t, status: 'timed_out', endedAt: event.data.at })),
      };
    case 'TaskCancelled': {
      const task = s.tasks[event.data.taskId];
      const node = task === undefined ? undefined : s.nodes[task.nodeId];
      const nodes =
        node?.status === 'waiting'
          ? { ...s.nodes, [node.nodeId]: { ...node, status: 'cancelled' as const, endedAt: event.data.at } }
          : s.nodes;
      return {
        ...s,
        updatedAt: event.data.at,
        nodes,
        tasks: withTask(s, event.data.taskId, (t) => ({ ...t, status: 'cancelled', endedAt: event.data.at })),
      };
    }
    case 'ChildExecutionStarted': {
      const d = event.data;
      const child: ChildRecord = {
        childExecutionId: d.childExecutionId,
        nodeId: d.nodeId,
        attemptId: d.attemptId,
        workflow: d.workflow,
        revision: d.revision,
        status: 'running',
        startedAt: d.at,
        endedAt: null,
      };
      const node: NodeRecord = { nodeId: d.nodeId, attemptId: d.attemptId, status: 'waiting', startedAt: d.at, endedAt: null };
      return {
        ...s,
        updatedAt: d.at,
        children: { ...s.children, [d.childExecutionId]: child },
        nodes: { ...s.nodes, [d.nodeId]: node },
      };
    }
    case 'ChildExecutionEnded': {
      const d = event.data;
      const child = s.children?.[d.childExecutionId];
      if (child === undefined) return { ...s, updatedAt: d.at };
      const node = s.nodes[d.nodeId];
      // A child cancelled with (or after) its parent leaves its node cancelled, as a task does.
      const nodes =
        node?.status === 'waiting' && d.status === 'cancelled'
          ? { ...s.nodes, [d.nodeId]: { ...node, status: 'cancelled' as const, endedAt: d.at } }
          : s.nodes;
      return {
        ...s,
        updatedAt: d.at,
        nodes,
        children: { ...s.children, [d.childExecutionId]: { ...child, status: d.status, endedAt: d.at } },
      };
    }
    case 'TimerScheduled':
    case 'TimerFired':
    case 'TimerCancelled':
    case 'SignalReceived':
    case 'SignalAwaited':
    case 'SignalDelivered':
    case 'SignalWaitCancelled':
      return evolveDurableWait(s, event);
    case 'ApprovalGranted':
    case 'ApprovalRejected': {
      const d = event.data;
      const granted = event.type === 'ApprovalGranted';
      const previous = s.nodes[d.nodeId];
      const node: NodeRecord = {
        nodeId: d.nodeId,
        attemptId: previous?.attemptId ?? '',
        status: granted ? 'succeeded' : 'failed',
        startedAt: previous?.startedAt ?? null,
        endedAt: d.at,
        ...(granted
          ? { output: { approved: true, decidedBy: d.decidedBy, actionDigest: d.actionDigest, comment: d.comment } }
          : { error: { code: 'approval_rejected', message: d.comment ?? `rejected by ${d.decidedBy}`, retryable: false } }),
      };
      // The decision ends the approval's wait: the execution waits on for its other waits, if any.
      return {
        ...s,
        ...(s.status === 'awaiting_approval' ? { status: 'waiting' as const } : {}),
        waits: s.waits.filter((w) => w.nodeId !== d.nodeId),
        updatedAt: d.at,
        pendingApproval: null,
        approvalDecisions: {
          ...s.approvalDecisions,
          [d.nodeId]: { decision: granted ? 'approve' : 'reject', actionDigest: d.actionDigest },
        },
        nodes: { ...s.nodes, [d.nodeId]: node },
      };
    }
    case 'AttemptSucceeded':
      return endAttempt(s, event.data.attemptId, 'succeeded', event.data.at, { output: event.data.output });
    case 'AttemptFailed':
      return endAttempt(s, event.data.attemptId, 'failed', event.data.at, { error: event.data.error });
    case 'AttemptTimedOut':
      return endAttempt(s, event.data.attemptId, 'timed_out', event.data.at, {});
    case 'AttemptCancelled':
      return endAttempt(s, event.data.attemptId, 'cancelled', event.data.at, {});
    case 'CancelRequested':
      return { ...s, updatedAt: event.data.at, cancelRequest: { ...event.data } };
    case 'RedriveRequested': {
      const d = event.data;
      return {
        ...s,
        updatedAt: d.at,
        cancelRequest: null,
        pendingApproval: null,
        attemptsInRun: 0,
        runStartedAt: d.at,
        slotAttemptId: null,
        slotYielded: false,
        endedAt: null,
        output: undefined,
        error: undefined,
        endReason: undefined,
        redrives: {
          ...s.redrives,
          [d.idempotencyKey]: {
            redriveId: d.redriveId,
            fingerprint: d.requestFingerprint,
            attemptId: d.attemptId,
            attemptNumber: d.attemptNumber,
          },
        },
      };
    }
    // An ending also ends a wait for a slot (a waiting execution may be cancelled or time out).
    case 'ExecutionSucceeded':
      return { ...s, status: 'succeeded', output: event.data.output, endedAt: event.data.at, updatedAt: event.data.at, awaitingSlot: null };
    case 'ExecutionFailed':
      return { ...s, status: 'failed', error: event.data.error, endedAt: event.data.at, updatedAt: event.data.at, awaitingSlot: null };
    case 'ExecutionTimedOut':
      return {
        ...s,
        status: 'timed_out',
        endReason: event.data.reason,
        endedAt: event.data.at,
        updatedAt: event.data.at,
        awaitingSlot: null,
      };
    case 'ExecutionCancelled':
      return {
        ...s,
        status: 'cancelled',
        endReason: event.data.reason,
        endedAt: event.data.at,
        updatedAt: event.data.at,
        awaitingSlot: null,
      };
    default: {
      const unknown: never = event;
      return unknown;
    }
  }
}

type DurableWaitEvent = Extract<
  ExecutionEvent,
  {
    type:
      'TimerScheduled' | 'TimerFired' | 'TimerCancelled' | 'SignalReceived' | 'SignalAwaited' | 'SignalDelivered' | 'SignalWaitCancelled';
  }
>;

/** Timers and signals (docs/architecture.md, "Waiting steps"): the node waits until the fact that ends its wait. */
function evolveDurableWait(s: StartedExecution, event: DurableWaitEvent): StartedExecution {
  const timers = s.timers ?? {};
  const waits = s.signalWaits ?? {};
  const waitingNode = (nodeId: string, attemptId: string, at: string): NodeRecord => {
    const previous = s.nodes[nodeId];
    const continues = previous?.status === 'waiting';
    return {
      nodeId,
      attemptId: continues ? previous.attemptId : attemptId,
      status: 'waiting',
      startedAt: continues ? previous.startedAt : at,
      endedAt: null,
    };
  };
  const cancelledNode = (nodeId: string, at: string) => {
    const node = s.nodes[nodeId];
    return node?.status === 'waiting' ? { ...s.nodes, [nodeId]: { ...node, status: 'cancelled' as const, endedAt: at } } : s.nodes;
  };
  switch (event.type) {
    case 'TimerScheduled': {
      const d = event.data;
      const timer: TimerRecord = { ...d, status: 'scheduled', firedAt: null, lateByMs: null, endedAt: null };
      const nodes = d.purpose === 'delay' ? { ...s.nodes, [d.nodeId]: waitingNode(d.nodeId, d.attemptId, d.scheduledAt) } : s.nodes;
      return { ...s, updatedAt: d.scheduledAt, timers: { ...timers, [d.timerId]: timer }, nodes };
    }
    case 'TimerFired': {
      const d = event.data;
      const timer = timers[d.timerId];
      if (timer === undefined) return s;
      const fired: TimerRecord = { ...timer, status: 'fired', firedAt: d.firedAt, lateByMs: d.lateByMs, endedAt: d.firedAt };
      const wait = waits[d.nodeId];
      const timedOut = timer.purpose === 'signal_timeout' && wait?.timerId === d.timerId && wait.status === 'waiting';
      return {
        ...s,
        updatedAt: d.firedAt,
        timers: { ...timers, [d.timerId]: fired },
        signalWaits: timedOut ? { ...waits, [d.nodeId]: { ...wait, status: 'timed_out' } } : waits,
      };
    }
    case 'TimerCancelled': {
      const timer = timers[event.data.timerId];
      if (timer === undefined) return s;
      const at = event.data.at;
      return {
        ...s,
        updatedAt: at,
        timers: { ...timers, [timer.timerId]: { ...timer, status: 'cancelled', endedAt: at } },
        nodes: timer.purpose === 'delay' ? cancelledNode(timer.nodeId, at) : s.nodes,
      };
    }
    case 'SignalReceived': {
      const d = event.data;
      const signal: SignalRecord = {
        signalId: d.signalId,
        name: d.name,
        payload: d.payload,
        idempotency: d.idempotency,
        sentBy: d.sentBy,
        receivedAt: d.at,
        deliveredTo: null,
      };
      return { ...s, updatedAt: d.at, signals: [...(s.signals ?? []), signal] };
    }
    case 'SignalAwaited': {
      const d = event.data;
      const wait: SignalWaitRecord = { ...d, status: 'waiting', since: d.at, signalId: null };
      return {
        ...s,
        updatedAt: d.at,
        signalWaits: { ...waits, [d.nodeId]: wait },
        nodes: { ...s.nodes, [d.nodeId]: waitingNode(d.nodeId, d.attemptId, d.at) },
      };
    }
    case 'SignalDelivered': {
      const d = event.data;
      const wait = waits[d.nodeId];
      return {
        ...s,
        updatedAt: d.at,
        signals: (s.signals ?? []).map((signal) => (signal.signalId === d.signalId ? { ...signal, deliveredTo: d.nodeId } : signal)),
        signalWaits: wait === undefined ? waits : { ...waits, [d.nodeId]: { ...wait, status: 'delivered', signalId: d.signalId } },
      };
    }
    case 'SignalWaitCancelled': {
      const d = event.data;
      const wait = waits[d.nodeId];
      return {
        ...s,
        updatedAt: d.at,
        signalWaits: wait === undefined ? waits : { ...waits, [d.nodeId]: { ...wait, status: 'cancelled' } },
        nodes: cancelledNode(d.nodeId, d.at),
      };
    }
  }
}

function withTask(s: StartedExecution, taskId: string, change: (t: TaskRecord) => TaskRecord): Record<string, TaskRecord> {
  const task = s.tasks[taskId];
  return task === undefined ? s.tasks : { ...s.tasks, [taskId]: change(task) };
}

function endAttempt(
  s: StartedExecution,
  attemptId: string,
  status: EndedAttemptStatus,
  at: string,
  extra: Pick<EndedAttempt, 'output' | 'error'>,
): StartedExecution {
  return { ...s, updatedAt: at, attempts: withAttempt(s, attemptId, (a): EndedAttempt => ({ ...a, ...extra, status, endedAt: at })) };
}

function nodeRecord(
  previous: NodeRecord | undefined,
  event: Extract<ExecutionEvent, { type: 'NodeStarted' | 'NodeSucceeded' | 'NodeFailed' | 'NodeSkipped' }>,
): NodeRecord {
  const { attemptId, nodeId, at } = event.data;
  const startedAt = previous?.attemptId === attemptId ? previous.startedAt : null;
  switch (event.type) {
    case 'NodeStarted':
      return { nodeId, attemptId, status: 'running', startedAt: at, endedAt: null };
    case 'NodeSucceeded':
      return { nodeId, attemptId, status: 'succeeded', startedAt, endedAt: at, output: event.data.output };
    case 'NodeFailed':
      return { nodeId, attemptId, status: 'failed', startedAt, endedAt: at, error: event.data.error };
    case 'NodeSkipped':
      return { nodeId, attemptId, status: 'skipped', startedAt, endedAt: at, reason: event.data.reason };
  }
}
