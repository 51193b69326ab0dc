import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Urgent database work: statements issued inside `urgently(work)` (and everything it awaits)
 * are marked urgent. A database shared one statement at a time by every role of the process
 * (PGlite, see `StatementTurns`) runs them before the other roles' statements, and holds the
 * others back, for a bounded time, while any such work is under way: e.g. the timer role's
 * firing of a batch of due timers goes ahead of the dispatcher, watchdog and projector acting on
 * the executions already fired. A server-backed client ignores the mark (its connections run
 * side by side). Kept in an `AsyncLocalStorage`, so no port changes shape: the mark follows the
 * work through every await, whichever adapter issues the statement.
 */
const scope = new AsyncLocalStorage<boolean>();
let active = 0;
const whenDone = new Set<() => void>();

/** Runs `work` as urgent database work; the hold on other statements lasts until it settles. */
export async function urgently<T>(work: () => Promise<T>): Promise<T> {
  active += 1;
  try {
    return await scope.run(true, work);
  } finally {
    active -= 1;
    if (active === 0) for (const listener of whenDone) listener();
  }
}

/**
 * Runs `work` marked urgent or not, without holding anyone back: for code that sends a
 * statement on behalf of others (a batch of several callers' appends) and must carry their mark,
 * not that of whichever call chain happens to send it.
 */
export function withUrgency<T>(urgent: boolean, work: () => T): T {
  return scope.run(urgent, work);
}

/** Whether the calling code runs inside `urgently`. */
export function isUrgent(): boolean {
  return scope.getStore() === true;
}

/** Whether any urgent work is under way in this process. */
export function urgentWorkUnderWay(): boolean {
  return active > 0;
}

/** Called each time the last urgent work in progress settles; returns the function that stops it. */
export function onUrgentWorkDone(listener: () => void): () => void {
  whenDone.add(listener);
  return () => whenDone.delete(listener);
}
