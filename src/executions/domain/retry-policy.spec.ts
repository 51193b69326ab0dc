import { describe, expect, it } from '@jest/globals';
import type { RetryPolicy } from './execution.events.js';
import { backoffMs, shouldRetry } from './retry-policy.js';

const policy: RetryPolicy = {
  maxAttempts: 4,
  initialIntervalMs: 1_000,
  backoffCoefficient: 2,
  maxIntervalMs: 5_000,
  nonRetryable: ['bad_request'],
};
const transient = { code: 'upstream_unavailable', message: 'upstream answered 503' };

/** The delay before jitter: exponential in the retry number, capped at maxIntervalMs. */
const cappedDelay = (p: RetryPolicy, retryNumber: number) =>
  Math.min(p.maxIntervalMs, p.initialIntervalMs * p.backoffCoefficient ** (retryNumber - 1));

describe('shouldRetry', () => {
  it('retries a retryable error while attempts are left', () => {
    expect(shouldRetry(policy, 1, transient)).toBe(true);
    expect(shouldRetry(policy, 3, transient)).toBe(true);
  });

  it('stops once maxAttempts attempts have run', () => {
    expect(shouldRetry(policy, 4, transient)).toBe(false);
    expect(shouldRetry(policy, 5, transient)).toBe(false);
  });

  it('never retries under the default policy of one attempt', () => {
    expect(shouldRetry({ ...policy, maxAttempts: 1 }, 1, transient)).toBe(false);
  });

  it('does not retry an error code the policy lists as non-retryable', () => {
    expect(shouldRetry(policy, 1, { code: 'bad_request', message: 'rejected' })).toBe(false);
  });

  it('does not retry an error marked retryable: false, whatever the policy says', () => {
    expect(shouldRetry(policy, 1, { ...transient, retryable: false })).toBe(false);
  });

  it('lets the non-retryable list win over retryable: true', () => {
    expect(shouldRetry(policy, 1, { code: 'bad_request', message: 'rejected', retryable: true })).toBe(false);
  });

  it('retries a time-out, which carries no error, while attempts are left', () => {
    expect(shouldRetry(policy, 1, null)).toBe(true);
    expect(shouldRetry(policy, 4, null)).toBe(false);
  });
});

describe('backoffMs', () => {
  describe('without jitter', () => {
    it('waits half of the initial interval before the first retry', () => {
      expect(backoffMs(policy, 1, 0)).toBe(500);
    });

    it('grows by the backoff coefficient with each retry', () => {
      expect([1, 2, 3].map((n) => backoffMs(policy, n, 0))).toEqual([500, 1_000, 2_000]);
    });

    it('stops growing at maxIntervalMs', () => {
      expect([4, 5, 20].map((n) => backoffMs(policy, n, 0))).toEqual([2_500, 2_500, 2_500]);
    });

    it('stays constant with a coefficient of 1', () => {
      expect([1, 2, 3].map((n) => backoffMs({ ...policy, backoffCoefficient: 1 }, n, 0))).toEqual([500, 500, 500]);
    });

    it('is zero when the initial interval is zero', () => {
      expect(backoffMs({ ...policy, initialIntervalMs: 0 }, 3, 0.7)).toBe(0);
    });
  });

  describe('with jitter', () => {
    it('spreads the other half of the capped delay by the jitter', () => {
      expect(backoffMs(policy, 2, 0.5)).toBe(1_500);
      expect(backoffMs(policy, 10, 0.5)).toBe(3_750);
    });

    it('approaches the capped delay as the jitter approaches 1', () => {
      expect(backoffMs(policy, 3, 0.9999999)).toBe(4_000);
    });

    it('clamps a jitter outside [0, 1)', () => {
      expect(backoffMs(policy, 3, -2)).toBe(2_000);
      expect(backoffMs(policy, 3, 7)).toBe(4_000);
    });

    it('always lies within [capped / 2, capped]', () => {
      const policies: RetryPolicy[] = [policy, { ...policy, backoffCoefficient: 1.5, initialIntervalMs: 333, maxIntervalMs: 100_000 }];
      for (const p of policies) {
        for (let retryNumber = 1; retryNumber <= 12; retryNumber++) {
          const capped = cappedDelay(p, retryNumber);
          for (let step = 0; step <= 100; step++) {
            const delay = backoffMs(p, retryNumber, Math.min(step / 100, 0.9999999));
            expect(delay).toBeGreaterThanOrEqual(capped / 2);
            expect(delay).toBeLessThanOrEqual(capped);
          }
        }
      }
    });

    it('is a whole number of milliseconds', () => {
      expect(Number.isInteger(backoffMs({ ...policy, backoffCoefficient: 1.5, initialIntervalMs: 333 }, 3, 0.37))).toBe(true);
    });
  });
});
