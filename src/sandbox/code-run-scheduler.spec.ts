import { describe, expect, it } from '@jest/globals';
import { CodeRunScheduler, type CodeShareSettings } from './code-run-scheduler.js';

const settings = (overrides: Partial<CodeShareSettings> = {}): CodeShareSettings => ({
  threads: 2,
  cpuBudgetMs: 1_000,
  cpuWindowMs: 10_000,
  ...overrides,
});

/** Queues `count` runs named `<workspace><n>` (a1, a2, ...) in that order. */
const given = (scheduler: CodeRunScheduler<string>, workspaceId: string, count: number, from = 1) => {
  for (let n = from; n < from + count; n++) scheduler.enqueue(workspaceId, `${workspaceId}${n}`);
};

/** The runs free threads take, one per call, at `nowMs`. */
const take = (scheduler: CodeRunScheduler<string>, times: number, nowMs = 0) =>
  Array.from({ length: times }, () => scheduler.next(nowMs)?.run);

describe('CodeRunScheduler', () => {
  describe('when one workspace waits alone', () => {
    it('gives it every thread: no thread idles while a run waits', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 3 }));
      given(scheduler, 'a', 8);
      expect(take(scheduler, 3)).toEqual(['a1', 'a2', 'a3']);
    });
  });

  describe('when another workspace waits behind one that holds every thread', () => {
    it('gives it the next free thread, before the first workspace’s third run', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 2 }));
      given(scheduler, 'a', 8);
      expect(take(scheduler, 2)).toEqual(['a1', 'a2']);
      given(scheduler, 'b', 1);

      scheduler.finished('a', 50, 50);
      expect(take(scheduler, 1, 50)).toEqual(['b1']);
      scheduler.finished('b', 1, 51);
      // b ran code within the window: a keeps to N−1, so b's next run finds a thread free.
      expect(take(scheduler, 1, 51)).toEqual([undefined]);
      scheduler.finished('a', 52, 52);
      expect(take(scheduler, 1, 52)).toEqual(['a3']);
    });

    it('gives a workspace every thread again once the other has been idle for the window', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 2, cpuWindowMs: 10_000 }));
      given(scheduler, 'b', 1);
      expect(take(scheduler, 1, 0)).toEqual(['b1']);
      scheduler.finished('b', 1, 1);
      given(scheduler, 'a', 3);
      expect(take(scheduler, 2, 2)).toEqual(['a1', undefined]);
      expect(take(scheduler, 1, 10_002)).toEqual(['a2']);
    });

    it('holds a workspace to N−1 threads while the other waits, whoever was served last', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 3 }));
      given(scheduler, 'a', 8);
      given(scheduler, 'b', 8);
      expect(take(scheduler, 3)).toEqual(['a1', 'b1', 'a2']);
      scheduler.finished('b', 10, 10);
      expect(take(scheduler, 1, 10)).toEqual(['b2']);
      scheduler.finished('b', 10, 20);
      // a's turn by age, but it holds two of three threads: the free one goes to b.
      expect(take(scheduler, 1, 20)).toEqual(['b3']);
    });
  });

  describe('when several workspaces wait', () => {
    it('serves them in turn, the one served longest ago first, each queue in order', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 1 }));
      given(scheduler, 'a', 3);
      given(scheduler, 'b', 2);
      given(scheduler, 'c', 1);
      const order: (string | undefined)[] = [];
      for (let now = 0; scheduler.waiting > 0; now++) {
        const next = scheduler.next(now)!;
        order.push(next.run);
        scheduler.finished(next.workspaceId, 0, now);
      }
      expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
    });

    it('with one thread, passes it to a waiting workspace after each run', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 1 }));
      given(scheduler, 'a', 4);
      expect(take(scheduler, 1)).toEqual(['a1']);
      given(scheduler, 'b', 1);
      scheduler.finished('a', 10_000, 10_000);
      expect(take(scheduler, 1, 10_000)).toEqual(['b1']);
    });
  });

  describe('when a workspace is over its CPU budget', () => {
    it('gives it a thread only when no workspace within its budget waits', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 2, cpuBudgetMs: 1_000, cpuWindowMs: 10_000 }));
      given(scheduler, 'a', 1);
      take(scheduler, 1);
      scheduler.finished('a', 1_500, 1_500);
      expect(scheduler.balanceOf('a', 1_500)).toBe(-500);

      given(scheduler, 'a', 3, 2);
      given(scheduler, 'b', 2);
      // b, within its budget, goes first; a takes the other thread, as b may hold only one of two.
      expect(take(scheduler, 2, 1_500)).toEqual(['b1', 'a2']);
      scheduler.finished('b', 10, 1_510);
      expect(take(scheduler, 1, 1_510)).toEqual(['b2']);
    });

    it('is within it again once the window has refilled what it used', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 1, cpuBudgetMs: 1_000, cpuWindowMs: 10_000 }));
      given(scheduler, 'a', 1);
      take(scheduler, 1);
      scheduler.finished('a', 1_500, 1_500);
      // 500 ms overdrawn, refilled at 1,000 ms per 10 s: within the budget after 5 s.
      expect(scheduler.balanceOf('a', 6_400)).toBeLessThanOrEqual(0);
      expect(scheduler.balanceOf('a', 6_600)).toBeGreaterThan(0);
      expect(scheduler.balanceOf('a', 60_000)).toBe(1_000);
    });
  });

  describe('when a waiting run is removed', () => {
    it('never hands it out', () => {
      const scheduler = new CodeRunScheduler<string>(settings({ threads: 1 }));
      given(scheduler, 'a', 3);
      expect(scheduler.remove('a', 'a2')).toBe(true);
      expect(scheduler.remove('a', 'a9')).toBe(false);
      expect(take(scheduler, 3)).toEqual(['a1', 'a3', undefined]);
    });
  });
});
