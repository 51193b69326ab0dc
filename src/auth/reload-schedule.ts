/** When a burst of changes to the tokens file is read (docs/operations.md, "Tokens file"). */
export interface ReloadTiming {
  /** How long the file must stay quiet after a change before it is read: editors write in steps. */
  readonly debounceMs: number;
  /** The longest a change waits however many follow it: a busy file cannot postpone a revocation. */
  readonly maxDelayMs: number;
}

/** A read that is waiting: the burst's first change and when the read is due. */
export interface PendingReload {
  readonly firstChangeAt: number;
  readonly dueAt: number;
}

/**
 * Where a change seen at `now` (milliseconds) puts the read: `debounceMs` after it, but never
 * later than `maxDelayMs` after the first change of the burst, so a revocation takes effect
 * within `maxDelayMs` while anything keeps writing (promise 13).
 */
export function scheduleReload(pending: PendingReload | null, now: number, timing: ReloadTiming): PendingReload {
  const firstChangeAt = pending?.firstChangeAt ?? now;
  const latest = firstChangeAt + timing.maxDelayMs;
  return { firstChangeAt, dueAt: Math.min(now + Math.min(timing.debounceMs, timing.maxDelayMs), latest) };
}
