export interface BackoffPolicy {
  /** The first pause (before jitter). */
  initialMs: number;
  /** The longest pause. */
  maxMs: number;
}

/**
 * The pause before try `failures + 1` after `failures` failures in a row: doubling from
 * `initialMs` up to `maxMs`, then drawn between half of that and all of it, so that many workers
 * that failed together do not come back together. A server's `Retry-After` is a floor.
 */
export function backoffDelay(failures: number, policy: BackoffPolicy, retryAfterMs: number | null = null, random = Math.random): number {
  const ceiling = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, failures - 1));
  const jittered = ceiling / 2 + random() * (ceiling / 2);
  return Math.round(Math.max(jittered, Math.min(retryAfterMs ?? 0, policy.maxMs)));
}

/** Waits `ms`, or less when `signal` fires first; never rejects. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
