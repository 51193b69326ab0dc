import type { AdmitExecution } from './execution.commands.js';
import type { ExecutionEvent } from './execution.events.js';
import { type ExecutionState, type StartedExecution, isFinal } from './execution.state.js';
import { rootTasks } from './tasks.js';

/**
 * The admission granted the run a slot of its workspace's quota: schedule the attempt it waits
 * with, or, when the run's first runnable nodes are all plain task nodes, their tasks instead. The queue deadline counts from now (the admission), not from the start: waiting for a
 * slot is not waiting for a worker. An admission asked again, or for a run that waits no more
 * (admitted already, cancelled or timed out while it waited), records nothing.
 */
export function admitExecution(s: StartedExecution, command: AdmitExecution): ExecutionEvent[] {
  const awaited = s.awaitingSlot;
  if (awaited === null || awaited.attemptId !== command.data.attemptId) return [];
  const now = command.metadata.now;
  const at = now.toISOString();
  // A start whose first runnable nodes are all plain task nodes: their tasks take the slot, no attempt is needed.
  const tasks = awaited.reason === 'start' ? rootTasks(s, awaited.attemptId, now) : null;
  if (tasks !== null) return tasks;
  return [
    {
      type: 'AttemptScheduled',
      data: {
        attemptId: awaited.attemptId,
        attemptNumber: awaited.attemptNumber,
        reason: awaited.reason,
        notBefore: at,
        queueDeadline: new Date(now.getTime() + s.workflow.graph.timeouts.queueMs).toISOString(),
        scheduledAt: at,
      },
    },
  ];
}

/** The run still waits for a slot to have `attemptId` scheduled. */
export function awaitsSlot(state: ExecutionState, attemptId: string): boolean {
  return state.status !== 'not_started' && state.awaitingSlot?.attemptId === attemptId;
}

/**
 * The run that `attemptId` admitted is still live, so the slot it took is in use: it was
 * scheduled as the run's admission and the execution has not ended (nor been redriven since).
 */
export function holdsSlot(state: ExecutionState, attemptId: string): boolean {
  return state.status !== 'not_started' && !isFinal(state) && state.slotAttemptId === attemptId;
}
