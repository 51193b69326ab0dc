import { describe, expect, it } from '@jest/globals';
import { backoffDelay, pause } from './backoff.js';

describe('backoffDelay', () => {
  const policy = { initialMs: 100, maxMs: 1_000 };

  it('doubles from the first pause up to the longest, drawn between half and all of it', () => {
    const lowest = (failures: number) => backoffDelay(failures, policy, null, () => 0);
    const highest = (failures: number) => backoffDelay(failures, policy, null, () => 1);
    expect([1, 2, 3, 4, 5, 10].map(highest)).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect([1, 2, 3, 4, 5, 10].map(lowest)).toEqual([50, 100, 200, 400, 500, 500]);
  });

  it("takes a server's Retry-After as a floor, capped at the longest pause", () => {
    expect(backoffDelay(1, policy, 700, () => 0)).toBe(700);
    expect(backoffDelay(1, policy, 60_000, () => 0)).toBe(1_000);
    expect(backoffDelay(5, policy, 10, () => 1)).toBe(1_000);
  });
});

describe('pause', () => {
  it('ends early, without rejecting, when its signal fires', async () => {
    const controller = new AbortController();
    const paused = pause(3_600_000, controller.signal);
    controller.abort();
    await expect(paused).resolves.toBeUndefined();
    await expect(pause(3_600_000, controller.signal)).resolves.toBeUndefined();
  });
});
