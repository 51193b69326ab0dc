import type { Position } from '../../core/event-store.port.js';
import { isFinal, type ExecutionState } from '../../executions/domain/execution.state.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Executions that ended before this instant are past retention: `now` minus `days` whole days. */
export function retentionCutoff(now: Date, days: number): Date {
  return new Date(now.getTime() - days * DAY_MS);
}

/**
 * Whether an execution may be deleted: it has ended (a terminal status, which only a redrive
 * could leave) and its end lies before the cutoff. A running or waiting one is kept, however old.
 */
export function isExpired(state: ExecutionState, cutoff: Date): boolean {
  return isFinal(state) && state.endedAt !== null && Date.parse(state.endedAt) < cutoff.getTime();
}

/** The later of two positions of one store (fixed-width strings: text order is log order); null is before all. */
export function laterPosition(a: Position | null, b: Position | null): Position | null {
  if (a === null) return b;
  if (b === null) return a;
  return a >= b ? a : b;
}

/**
 * Whether a resume position is older than the retention horizon (the newest deleted position):
 * events after it may have been deleted, so resuming there could silently skip them.
 */
export function isBeyondHorizon(resume: Position, horizon: Position | null): boolean {
  return horizon !== null && resume < horizon;
}
