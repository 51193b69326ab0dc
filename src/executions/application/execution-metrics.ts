import type { ExecutionEndStatus, Metrics } from '../../core/metrics.port.js';
import type { ExecutionEvent } from '../domain/execution.events.js';
import type { ExecutionState } from '../domain/execution.state.js';

const ENDED: Partial<Record<ExecutionEvent['type'], ExecutionEndStatus>> = {
  ExecutionSucceeded: 'succeeded',
  ExecutionFailed: 'failed',
  ExecutionCancelled: 'cancelled',
  ExecutionTimedOut: 'timed_out',
};

/**
 * Counts the facts of one append to an execution stream, in the process that appended them
 * (each fact is appended once, so each is counted once across all processes): starts, ends by
 * status, and how long each claimed attempt waited in the queue.
 */
export function recordExecutionFacts(
  metrics: Pick<Metrics, 'executionStarted' | 'executionEnded' | 'attemptQueued'>,
  events: readonly ExecutionEvent[],
  state: ExecutionState,
): void {
  if (state.status === 'not_started') return;
  for (const event of events) {
    if (event.type === 'ExecutionStarted') {
      metrics.executionStarted(state.workspaceId);
      continue;
    }
    if (event.type === 'AttemptClaimed') {
      const attempt = state.attempts.find((a) => a.attemptId === event.data.attemptId);
      if (attempt === undefined) continue;
      // Claimable from its scheduling, or from its notBefore for a retry held back until then.
      const claimable = Math.max(Date.parse(attempt.scheduledAt), Date.parse(attempt.notBefore));
      metrics.attemptQueued((Date.parse(event.data.claimedAt) - claimable) / 1000);
      continue;
    }
    const ended = ENDED[event.type];
    if (ended !== undefined) metrics.executionEnded(state.workspaceId, ended);
  }
}
