import type { ExecutionError, RetryPolicy } from './execution.events.js';

/** Whether the policy allows another attempt after `attemptsSoFar` attempts ended with `error`. */
export function shouldRetry(policy: RetryPolicy, attemptsSoFar: number, error: ExecutionError | null): boolean {
  if (attemptsSoFar >= policy.maxAttempts) return false;
  if (error === null) return true;
  if (error.retryable === false) return false;
  return !policy.nonRetryable.includes(error.code);
}

/**
 * Delay before retry number `retryNumber` (1 for the first retry): exponential, capped, with
 * "equal jitter" — half fixed, half spread by `jitter` in [0, 1) — so retries of many
 * executions that failed together do not arrive together.
 */
export function backoffMs(policy: RetryPolicy, retryNumber: number, jitter: number): number {
  const exponential = policy.initialIntervalMs * policy.backoffCoefficient ** Math.max(0, retryNumber - 1);
  const capped = Math.min(policy.maxIntervalMs, exponential);
  const spread = capped / 2 + (capped / 2) * Math.min(Math.max(jitter, 0), 0.999999);
  // Whole milliseconds that stay within [capped / 2, capped] even when capped is fractional.
  return Math.min(Math.floor(capped), Math.max(Math.ceil(capped / 2), Math.round(spread)));
}
