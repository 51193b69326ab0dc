import { describe, expect, it } from '@jest/globals';
import { scheduleReload, type PendingReload } from './reload-schedule.js';

const timing = { debounceMs: 200, maxDelayMs: 500 };

/** The pending read after a change at each of `times`, in turn. */
const given = (times: number[]): PendingReload | null =>
  times.reduce<PendingReload | null>((pending, now) => scheduleReload(pending, now, timing), null);

describe('scheduling a read of the tokens file', () => {
  it('reads a lone change once the file was quiet for the debounce', () => {
    expect(given([1_000])).toEqual({ firstChangeAt: 1_000, dueAt: 1_200 });
  });

  it('waits for the last of a few quick changes', () => {
    expect(given([1_000, 1_050, 1_120])).toEqual({ firstChangeAt: 1_000, dueAt: 1_320 });
  });

  it('reads within the longest delay of the first change however busy the file stays', () => {
    // A change every 10 ms for 5 s: without a cap the read would wait for a quiet that never comes.
    const busy = Array.from({ length: 500 }, (_, i) => 1_000 + i * 10);
    for (let n = 1; n <= busy.length; n++) expect(given(busy.slice(0, n))!.dueAt).toBeLessThanOrEqual(1_500);
    expect(given(busy)).toEqual({ firstChangeAt: 1_000, dueAt: 1_500 });
  });

  it('never waits longer than the longest delay, even when the debounce is longer', () => {
    expect(scheduleReload(null, 0, { debounceMs: 200, maxDelayMs: 50 })).toEqual({ firstChangeAt: 0, dueAt: 50 });
  });
});
