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
  'AttemptSuspended',
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

export type NodeState = 'pending' | 'running' | 'succeeded' | 'failed' | 'skipped' | 'awaiting_approval' | 'waiting';

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

/**
 * The state of each node after these events, for the nodes of the graph. A new attempt (a retry,
 * a redrive, a resume after an approval) runs again every node that had not succeeded: those go
 * back to pending until its events say otherwise.
 */
export function nodeStates(nodeIds: readonly string[], events: readonly TimelineEvent[]): Record<string, NodeState> {
  const states: Record<string, NodeState> = Object.fromEntries(nodeIds.map((id) => [id, 'pending']));
  for (const event of events) {
    const nodeId = str(event.data['nodeId']);
    switch (event.type) {
      case 'AttemptScheduled':
        for (const id of Object.keys(states)) if (states[id] !== 'succeeded') states[id] = 'pending';
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
      // A task, a delay's timer or a signal: the node waits for a fact from outside the attempt.
      case 'TaskScheduled':
      case 'SignalAwaited':
        if (nodeId !== null) states[nodeId] = 'waiting';
        break;
      case 'TimerScheduled':
        if (nodeId !== null && event.data['purpose'] === 'delay') states[nodeId] = 'waiting';
        break;
    }
  }
  return states;
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
  for (const event of events) {
    if (TERMINAL[event.type] !== undefined) status = TERMINAL[event.type];
    else if (event.type === 'ExecutionStarted' || event.type === 'AttemptScheduled' || event.type === 'ExecutionAwaitingSlot')
      status = 'queued';
    else if (event.type === 'AttemptClaimed') status = 'running';
    else if (event.type === 'AttemptSuspended') status = suspendedOn(event);
  }
  return status;
}

/** `awaiting_approval` while an approval is among the waits (or before waits were a list), else `waiting`. */
function suspendedOn(event: TimelineEvent): string {
  const waits = event.data['waits'];
  if (!Array.isArray(waits)) return 'awaiting_approval';
  return waits.some((w) => (w as { kind?: unknown }).kind === 'approval') ? 'awaiting_approval' : 'waiting';
}

export const isFinished = (status: string | null): boolean =>
  status === 'succeeded' || status === 'failed' || status === 'timed_out' || status === 'cancelled';
