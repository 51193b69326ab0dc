import { setTimeout as delay } from 'node:timers/promises';
import { inspect } from 'node:util';

/** Waits `ms` milliseconds: the tests' one sleep. */
export function sleep(ms: number): Promise<void> {
  return delay(ms);
}

export interface EventuallyOptions {
  /**
   * What is awaited, for the failure message ("the worker to start"); a function is asked
   * only on failure, so it can tell the state at that moment. Default: the probe's source.
   */
  what?: string | (() => string);
  /** How long to keep trying (default 30 s). A bound for a failing test, never a timing assertion. */
  timeoutMs?: number;
  /** The pause between tries (default 20 ms). */
  intervalMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_INTERVAL_MS = 20;

/**
 * The tests' one polling helper. Calls `probe` until a try passes, and resolves to what that try
 * returned. A try passes when the probe neither throws (nor rejects) nor returns `false`, so a
 * probe can be a jest assertion (`() => expect(x).toBe(1)`), a condition (`() => list.length > 2`)
 * or a lookup that answers `false` while the value is not there yet. After `timeoutMs` it
 * rejects with an error that names what was awaited and tells the last try's error or value
 * (the error is also the `cause`).
 *
 *   await eventually(async () => expect(await f.types(id)).toContain('ExecutionSucceeded'));
 *   const done = await eventually(async () => { const v = await view(id); return v.status === 'succeeded' && v; }, 'the execution to succeed');
 *   await eventually(() => consumer.handled.length === 3, { what: 'three results handled', timeoutMs: 10_000 });
 */
export async function eventually<T>(probe: () => T | Promise<T>, options: string | EventuallyOptions = {}): Promise<Exclude<T, false>> {
  const {
    what,
    timeoutMs = DEFAULT_TIMEOUT_MS,
    intervalMs = DEFAULT_INTERVAL_MS,
  } = typeof options === 'string' ? { what: options } : options;
  const deadline = Date.now() + timeoutMs;
  let tries = 0;
  let last: { error: unknown } | { value: T };
  for (;;) {
    tries++;
    try {
      const value = await probe();
      if (value !== false) return value as Exclude<T, false>;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (Date.now() >= deadline) {
      const awaited = typeof what === 'function' ? what() : (what ?? describeProbe(probe));
      const outcome = 'error' in last ? `the last one threw: ${describeError(last.error)}` : `the last one returned ${inspect(last.value)}`;
      const message = `timed out after ${timeoutMs} ms (${tries} tries) waiting for ${awaited}; ${outcome}`;
      throw 'error' in last ? new Error(message, { cause: last.error }) : new Error(message);
    }
    await delay(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}

function describeProbe(probe: () => unknown): string {
  const source = probe.toString().replace(/\s+/g, ' ').trim();
  return source.length > 160 ? `${source.slice(0, 157)}...` : source;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : inspect(error);
}
