// Pure logic of the live execution page: the timeline of events without repeats, and the state
// of each node and of the execution as the events tell it. No DOM, no React: unit-tested.

/** Every event type an execution stream sends (its `event:` names): EventSource listens by name. */
export const EXECUTION_EVENT_TYPES = [
  'ExecutionStarted',
  'AttemptScheduled',
  'ExecutionAwaitingSlot',
  'AttemptClaimed',
  'LeaseExtended',
  'NodeStarted',
  'NodeSucceeded',
  'NodeFailed',
  'NodeSkipped',
  'NodeAwaitingApproval',
  'MapItemsStarted',
  'MapItemsCompleted',
  'MapItemsFailed',
  'AttemptSuspended',
  'SlotYielded',
  'ApprovalGranted',
  'ApprovalRejected',
  'AttemptSucceeded',
  'AttemptFailed',
  'AttemptTimedOut',
  'AttemptCancelled',
  'CancelRequested',
  'RedriveRequested',
  'TaskScheduled',
  'TaskClaimed',
  'TaskLeaseExtended',
  'TaskSucceeded',
  'TaskFailed',
  'TaskTimedOut',
  'TaskCancelled',
  'ChildExecutionStarted',
  'ChildExecutionEnded',
  'TimerScheduled',
  'TimerFired',
  'TimerCancelled',
  'SignalReceived',
  'SignalAwaited',
  'SignalDelivered',
  'SignalWaitCancelled',
  'ExecutionSucceeded',
  'ExecutionFailed',
  'ExecutionTimedOut',
  'ExecutionCancelled',
] as const;

/** One event as the live stream (`data:`) and the history show it. */
export interface TimelineEvent {
  eventId: string;
  type: string;
  /** The event's global position: also its SSE `id:`, the resume point after a drop. */
  position: string;
  recordedAt: string;
  data: Record<string, unknown>;
}

/** `waiting`: a task node whose task is scheduled or claimed; `cancelled`: its task was cancelled with the execution. */
export type NodeState = 'pending' | 'running' | 'succeeded' | 'failed' | 'skipped' | 'awaiting_approval' | 'waiting' | 'cancelled';

/**
 * Appends the events not seen yet, in the order they came, and answers the same array when there
 * is nothing new. A position is an event's identity: an event delivered again (a resumed stream,
 * a page read twice) is never shown twice.
 */
export class EventLog {
  private readonly seen = new Set<string>();
  private list: TimelineEvent[] = [];

  get events(): readonly TimelineEvent[] {
    return this.list;
  }

  /** The position of the last event taken: where a new stream resumes. */
  get lastPosition(): string | null {
    return this.list.length === 0 ? null : this.list[this.list.length - 1].position;
  }

  /** Takes what is new; true when anything was. */
  add(events: readonly TimelineEvent[]): boolean {
    const fresh = events.filter((event) => {
      if (this.seen.has(event.position)) return false;
      this.seen.add(event.position);
      return true;
    });
    if (fresh.length === 0) return false;
    this.list = [...this.list, ...fresh];
    return true;
  }
}

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** The node of an event: its `nodeId`, or for a task's event the node named in its task id (`<executionId>.<nodeId>.<n>`). */
export function nodeOf(event: TimelineEvent): string | null {
  const nodeId = str(event.data['nodeId']);
  if (nodeId !== null) return nodeId;
  // Task and timer ids are `<executionId>.<nodeId>.<seq>`.
  const id = str(event.data['taskId']) ?? str(event.data['timerId']);
  return id === null ? null : (id.split('.')[1] ?? null);
}

/**
 * The state of each node after these events, for the nodes of the graph. A new attempt (a retry,
 * a redrive, a resume after an approval) runs again every node that had not succeeded: those go
 * back to pending until its events say otherwise.
 */
export function nodeStates(nodeIds: readonly string[], events: readonly TimelineEvent[]): Record<string, NodeState> {
  const states: Record<string, NodeState> = Object.fromEntries(nodeIds.map((id) => [id, 'pending']));
  for (const event of events) {
    const nodeId = nodeOf(event);
    switch (event.type) {
      case 'AttemptScheduled':
        // A task that is still live keeps its node waiting whatever attempt runs.
        for (const id of Object.keys(states)) if (states[id] !== 'succeeded' && states[id] !== 'waiting') states[id] = 'pending';
        break;
      case 'TaskScheduled':
        if (nodeId !== null) states[nodeId] = 'waiting';
        break;
      case 'TaskCancelled':
      case 'SignalWaitCancelled':
        if (nodeId !== null && states[nodeId] === 'waiting') states[nodeId] = 'cancelled';
        break;
      case 'NodeStarted':
        if (nodeId !== null) states[nodeId] = 'running';
        break;
      case 'NodeSucceeded':
      case 'ApprovalGranted':
        if (nodeId !== null) states[nodeId] = 'succeeded';
        break;
      case 'NodeFailed':
      case 'ApprovalRejected':
        if (nodeId !== null) states[nodeId] = 'failed';
        break;
      case 'NodeSkipped':
        if (nodeId !== null) states[nodeId] = 'skipped';
        break;
      case 'NodeAwaitingApproval':
        if (nodeId !== null) states[nodeId] = 'awaiting_approval';
        break;
      // A delay's timer, a signal or a child execution: the node waits for a fact from outside the attempt.
      case 'SignalAwaited':
      case 'ChildExecutionStarted':
        if (nodeId !== null) states[nodeId] = 'waiting';
        break;
      case 'TimerScheduled':
        if (nodeId !== null && event.data['purpose'] === 'delay') states[nodeId] = 'waiting';
        break;
    }
  }
  return states;
}

const count = (value: unknown): number => (Array.isArray(value) ? value.length : 0);
const items = (n: number): string => (n === 1 ? '1 item' : `${n} items`);

/** A short line about what an event says beyond its type and node: map item batches, a switch's choice. */
export function eventSummary(event: TimelineEvent): string {
  switch (event.type) {
    case 'MapItemsStarted':
      return `${items(count(event.data['indexes']))} started`;
    case 'MapItemsCompleted':
      return `${items(count(event.data['items']))} succeeded`;
    case 'MapItemsFailed': {
      const [first] = Array.isArray(event.data['items']) ? (event.data['items'] as { index?: unknown; error?: { code?: unknown } }[]) : [];
      const code = typeof first?.error?.code === 'string' ? `: ${first.error.code}` : '';
      return `${items(count(event.data['items']))} failed${code}`;
    }
    case 'NodeSucceeded': {
      const output = event.data['output'] as { case?: unknown; to?: unknown } | null | undefined;
      if (typeof output !== 'object' || output === null || !Array.isArray(output.to)) return '';
      if (output.case === 'default') return `took the default → ${output.to.join(', ') || 'nothing'}`;
      return typeof output.case === 'number' ? `took case ${output.case} → ${output.to.join(', ')}` : '';
    }
    default:
      return taskSummary(event);
  }
}

/** Items of each map node that succeeded and failed so far, for the graph's labels (the current attempt's failures only). */
export function mapProgress(events: readonly TimelineEvent[]): Record<string, { succeeded: number; failed: number }> {
  const progress: Record<string, { succeeded: number; failed: number }> = {};
  for (const event of events) {
    if (event.type === 'AttemptScheduled') for (const entry of Object.values(progress)) entry.failed = 0;
    const nodeId = str(event.data['nodeId']);
    if (nodeId === null || (event.type !== 'MapItemsCompleted' && event.type !== 'MapItemsFailed')) continue;
    const entry = (progress[nodeId] ??= { succeeded: 0, failed: 0 });
    if (event.type === 'MapItemsCompleted') entry.succeeded += count(event.data['items']);
    else entry.failed += count(event.data['items']);
  }
  return progress;
}

const TERMINAL: Record<string, string> = {
  ExecutionSucceeded: 'succeeded',
  ExecutionFailed: 'failed',
  ExecutionTimedOut: 'timed_out',
  ExecutionCancelled: 'cancelled',
};

/** The execution's status as its events tell it (null before its first event). */
export function executionStatus(events: readonly TimelineEvent[]): string | null {
  let status: string | null = null;
  let attempts = 0;
  for (const event of events) {
    if (TERMINAL[event.type] !== undefined) status = TERMINAL[event.type];
    else if (event.type === 'ExecutionStarted' || event.type === 'AttemptScheduled' || event.type === 'ExecutionAwaitingSlot') {
      if (event.type === 'AttemptScheduled') attempts += 1;
      status = 'queued';
    } else if (event.type === 'AttemptClaimed') status = 'running';
    else if (event.type === 'AttemptSuspended') status = suspendedOn(event);
    // Root tasks scheduled with the start: no attempt runs, the execution waits for its tasks.
    else if (event.type === 'TaskScheduled' && attempts === 0) status = 'waiting';
    // A decision ends the approval's wait; what follows (tasks, a resume attempt, the end) says the rest.
    else if ((event.type === 'ApprovalGranted' || event.type === 'ApprovalRejected') && status === 'awaiting_approval') status = 'waiting';
  }
  return status;
}

/** `awaiting_approval` while an approval is among the waits (or before waits were a list), else `waiting`. */
function suspendedOn(event: TimelineEvent): string {
  const waits = event.data['waits'];
  if (!Array.isArray(waits)) return 'awaiting_approval';
  return waits.some((w) => (w as { kind?: unknown }).kind === 'approval') ? 'awaiting_approval' : 'waiting';
}

/**
 * What each waiting node waits for, as its events tell it: a task (its queue, its try, who
 * claimed it) or a person's approval. Nodes that wait for nothing have no entry.
 */
export function nodeWaits(events: readonly TimelineEvent[]): Record<string, string> {
  const waits: Record<string, string> = {};
  const queues: Record<string, string> = {};
  for (const event of events) {
    const nodeId = nodeOf(event);
    if (nodeId === null) continue;
    switch (event.type) {
      case 'TaskScheduled': {
        queues[nodeId] = str(event.data['queue']) ?? '';
        const attempt = event.data['taskAttempt'];
        waits[nodeId] = `task on queue ${queues[nodeId]}${typeof attempt === 'number' && attempt > 1 ? ` · try ${attempt}` : ''}`;
        break;
      }
      case 'TaskClaimed':
        waits[nodeId] = `task on queue ${queues[nodeId] ?? '?'} · claimed by ${str(event.data['workerId']) ?? '?'}`;
        break;
      case 'NodeAwaitingApproval':
        waits[nodeId] = 'a person’s approval';
        break;
      case 'TimerScheduled':
        waits[nodeId] = `a timer due ${str(event.data['dueAt']) ?? '?'}`;
        break;
      case 'SignalAwaited':
        waits[nodeId] = `the signal ${str(event.data['name']) ?? '?'}`;
        break;
      case 'ChildExecutionStarted':
        waits[nodeId] = `child execution ${str(event.data['childExecutionId']) ?? '?'}`;
        break;
      case 'NodeSucceeded':
      case 'NodeFailed':
      case 'NodeSkipped':
      case 'ApprovalGranted':
      case 'ApprovalRejected':
      case 'TaskCancelled':
      case 'TimerCancelled':
      case 'SignalWaitCancelled':
      case 'ChildExecutionEnded':
        delete waits[nodeId];
        break;
    }
  }
  return waits;
}

/** A short line about a task's event for the event list (empty for other events). */
export function taskSummary(event: TimelineEvent): string {
  const d = event.data;
  const code = (d['error'] as { code?: unknown } | undefined)?.code;
  switch (event.type) {
    case 'TaskScheduled':
      return `queue ${str(d['queue']) ?? '?'} · try ${String(d['taskAttempt'] ?? 1)}`;
    case 'TaskClaimed':
      return `claimed by ${str(d['workerId']) ?? '?'}`;
    case 'TaskLeaseExtended':
      return d['progress'] === undefined ? 'heartbeat' : `heartbeat · progress ${JSON.stringify(d['progress'])}`;
    case 'TaskFailed':
      return `error ${typeof code === 'string' ? code : '?'}`;
    case 'TaskTimedOut':
      return str(d['reason']) ?? '';
    default:
      return '';
  }
}

export const isFinished = (status: string | null): boolean =>
  status === 'succeeded' || status === 'failed' || status === 'timed_out' || status === 'cancelled';
