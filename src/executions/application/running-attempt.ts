import { NotFoundError } from '../../core/errors.js';
import { type RunningAttempt, type StartedExecution, currentAttempt } from '../domain/execution.state.js';
import type { ExecutionOutcome } from './execution-streams.js';

/**
 * The execution and its claimed attempt after a claim or heartbeat the decider accepted: it
 * refuses both unless the attempt is current and running, so anything else is a bug here.
 */
export function runningAttempt(outcome: ExecutionOutcome, attemptId: string): { state: StartedExecution; attempt: RunningAttempt } {
  const state = outcome.state;
  if (state.status === 'not_started') throw new NotFoundError('execution not found');
  const attempt = currentAttempt(state);
  if (attempt?.attemptId !== attemptId || attempt.status !== 'running') {
    throw new Error(`attempt ${attemptId} is not the running attempt after the decider accepted it`);
  }
  return { state, attempt };
}
