import { InvalidStateError } from '../../core/errors.js';
import type { TimeOutExecution } from './execution.commands.js';
import type { ExecutionEvent } from './execution.events.js';
import { type StartedExecution, currentAttempt, isFinal } from './execution.state.js';

/**
 * When the current run of an execution must have ended: `timeouts.executionMs` after its start,
 * or after the last redrive (a redrive starts a new run; a retry or a resume does not). Time
 * spent waiting for a quota slot counts: the budget runs from the request, not the admission.
 */
export function executionDeadline(s: StartedExecution): string {
  return new Date(Date.parse(s.runStartedAt) + s.workflow.graph.timeouts.executionMs).toISOString();
}

/**
 * Ends an execution that ran past its deadline as timed out, with its live attempt (if any).
 * No retry: the deadline bounds the whole run. A finished execution has nothing left to end.
 */
export function timeOutExecution(s: StartedExecution, command: TimeOutExecution): ExecutionEvent[] {
  if (isFinal(s)) return [];
  const now = command.metadata.now;
  const deadline = executionDeadline(s);
  // A redrive may have moved the deadline since the watchdog noted it: then it is not due.
  if (now.getTime() < Date.parse(deadline)) throw new InvalidStateError('execution deadline has not passed', { deadline });
  const at = now.toISOString();
  const attempt = currentAttempt(s);
  const live = attempt !== undefined && (attempt.status === 'queued' || attempt.status === 'running');
  return [
    ...(live
      ? [{ type: 'AttemptTimedOut' as const, data: { attemptId: attempt.attemptId, reason: 'execution_deadline' as const, deadline, at } }]
      : []),
    { type: 'ExecutionTimedOut', data: { reason: 'execution deadline passed', at } },
  ];
}
