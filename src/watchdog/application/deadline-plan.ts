import type { ExecutionEvent } from '../../executions/domain/execution.events.js';

export type DeadlineKind = 'attempt' | 'execution';

/**
 * One deadline the watchdog watches: per execution at most one for its live attempt (queue
 * deadline while queued, lease while running) and one for the execution itself (executionMs).
 */
export interface Deadline {
  executionId: string;
  kind: DeadlineKind;
  /** The attempt an `attempt` deadline belongs to; null for the execution's own. */
  attemptId: string | null;
  dueMs: number;
}

/** Removes a deadline; with an attemptId, only while it still belongs to that attempt. */
export interface DeadlineRemoval {
  executionId: string;
  kind: DeadlineKind;
  attemptId: string | null;
}

/**
 * The deadline of a claimed task: its lease (`leaseMs`), or its timeout when that comes first.
 * `timeoutMs` null keeps the timeout already noted (a heartbeat moves only the lease).
 */
export interface TaskDeadline {
  taskId: string;
  executionId: string;
  leaseMs: number;
  timeoutMs: number | null;
}

export interface DeadlinePlan {
  upserts: Deadline[];
  removals: DeadlineRemoval[];
  /** Claimed tasks' deadlines, one change per task. */
  taskUpserts: TaskDeadline[];
  /** Tasks that ended: their deadlines go. */
  taskRemovals: string[];
}

const TASK_ENDINGS = new Set(['TaskSucceeded', 'TaskFailed', 'TaskTimedOut', 'TaskCancelled']);

const ATTEMPT_ENDINGS = new Set(['AttemptSucceeded', 'AttemptFailed', 'AttemptTimedOut', 'AttemptCancelled', 'AttemptSuspended']);
const EXECUTION_ENDINGS = new Set(['ExecutionSucceeded', 'ExecutionFailed', 'ExecutionTimedOut', 'ExecutionCancelled']);

type Change = { op: 'upsert'; deadline: Deadline } | { op: 'remove'; removal: DeadlineRemoval };

/**
 * What a batch of execution events does to the watched deadlines, coalesced to one change per
 * (execution, kind) so a batch costs two statements. `runDeadlines` holds, for each redriven
 * execution, the deadline of its current run (null when it has ended since).
 */
export function planDeadlines(
  events: ReadonlyArray<{ executionId: string; event: ExecutionEvent }>,
  runDeadlines: ReadonlyMap<string, number | null>,
): DeadlinePlan {
  const changes = new Map<string, Change>();
  const upsert = (deadline: Deadline) => changes.set(`${deadline.executionId}:${deadline.kind}`, { op: 'upsert', deadline });
  const remove = (executionId: string, kind: DeadlineKind, attemptId: string | null) => {
    const key = `${executionId}:${kind}`;
    const previous = changes.get(key);
    // Upserted earlier in this batch: whatever the table held was replaced, so remove it outright.
    const owner = previous?.op === 'upsert' && previous.deadline.attemptId === attemptId ? null : attemptId;
    changes.set(key, { op: 'remove', removal: { executionId, kind, attemptId: owner } });
  };

  const tasks = new Map<string, { op: 'upsert'; deadline: TaskDeadline } | { op: 'remove' }>();
  for (const { executionId, event } of events) {
    if (event.type === 'TaskClaimed' || event.type === 'TaskLeaseExtended') {
      const previous = tasks.get(event.data.taskId);
      const timeoutMs =
        event.type === 'TaskClaimed'
          ? event.data.timeoutAt === null
            ? null
            : Date.parse(event.data.timeoutAt)
          : previous?.op === 'upsert'
            ? previous.deadline.timeoutMs
            : null;
      tasks.set(event.data.taskId, {
        op: 'upsert',
        deadline: { taskId: event.data.taskId, executionId, leaseMs: Date.parse(event.data.leaseExpiresAt), timeoutMs },
      });
      continue;
    }
    if (TASK_ENDINGS.has(event.type)) {
      tasks.set((event.data as { taskId: string }).taskId, { op: 'remove' });
      continue;
    }
    const attempt = (attemptId: string, due: string) => upsert({ executionId, kind: 'attempt', attemptId, dueMs: Date.parse(due) });
    switch (event.type) {
      case 'ExecutionStarted':
        upsert({
          executionId,
          kind: 'execution',
          attemptId: null,
          dueMs: Date.parse(event.data.startedAt) + event.data.workflow.graph.timeouts.executionMs,
        });
        break;
      case 'AttemptScheduled':
        attempt(event.data.attemptId, event.data.queueDeadline);
        break;
      case 'AttemptClaimed':
      case 'LeaseExtended':
        attempt(event.data.attemptId, event.data.leaseExpiresAt);
        break;
      case 'RedriveRequested': {
        const due = runDeadlines.get(executionId);
        if (due !== undefined && due !== null) upsert({ executionId, kind: 'execution', attemptId: null, dueMs: due });
        break;
      }
      default:
        if (ATTEMPT_ENDINGS.has(event.type)) remove(executionId, 'attempt', (event.data as { attemptId: string }).attemptId);
        else if (EXECUTION_ENDINGS.has(event.type)) {
          remove(executionId, 'execution', null);
          remove(executionId, 'attempt', null);
        }
    }
  }

  const plan: DeadlinePlan = { upserts: [], removals: [], taskUpserts: [], taskRemovals: [] };
  for (const [taskId, change] of tasks) {
    if (change.op === 'upsert') plan.taskUpserts.push(change.deadline);
    else plan.taskRemovals.push(taskId);
  }
  for (const change of changes.values()) {
    if (change.op === 'upsert') plan.upserts.push(change.deadline);
    else plan.removals.push(change.removal);
  }
  return plan;
}
