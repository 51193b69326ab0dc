import { describe, expect, it } from '@jest/globals';
import { takeToken, type Bucket, type Take } from './token-bucket.js';

const rule = { perMinute: 3 };

/** Takes at each of `times` in turn, keeping what each take leaves. */
function takes(times: number[]): Take[] {
  let bucket: Bucket | undefined;
  return times.map((now) => {
    const take = takeToken(bucket, now, rule);
    if (take.allowed) bucket = take.bucket;
    return take;
  });
}

describe('a token bucket', () => {
  it('allows a burst of its capacity, then refuses, telling how long until the next token', () => {
    const outcomes = takes([0, 0, 0, 0]);
    expect(outcomes.map((take) => take.allowed)).toEqual([true, true, true, false]);
    expect(outcomes[3]).toEqual({ allowed: false, retryAfterMs: 20_000 });
  });

  it('refills at its rate: one token every 60 s / perMinute', () => {
    expect(takes([0, 0, 0, 19_999]).at(-1)!.allowed).toBe(false);
    expect(takes([0, 0, 0, 20_000]).at(-1)!.allowed).toBe(true);
    expect(takes([0, 0, 0, 10_000]).at(-1)).toEqual({ allowed: false, retryAfterMs: 10_000 });
  });

  it('never holds more than its capacity after a quiet spell', () => {
    expect(takes([0, 600_000, 600_000, 600_000, 600_000]).map((take) => take.allowed)).toEqual([true, true, true, true, false]);
  });

  it('does not spend a refused take', () => {
    expect(takes([0, 0, 0, 5_000, 10_000, 15_000, 20_000]).map((take) => take.allowed)).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
      true,
    ]);
  });
});
