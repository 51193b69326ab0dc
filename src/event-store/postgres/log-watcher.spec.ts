import { describe, expect, it, jest } from '@jest/globals';
import { sleep } from '../../../test/support/eventually.js';
import { flushEventLoop } from '../../../test/support/worker/dag/deferred.js';
import { LogWatcher, type LogProbe } from './log-watcher.js';

function watcherOver(probe: () => Promise<LogProbe>, settleMs = 0, alwaysSettle = false) {
  let wakeFromOtherProcess = () => undefined as void;
  const watcher = new LogWatcher({
    alwaysSettle,
    probe,
    listen: async (onWake) => {
      wakeFromOtherProcess = onWake;
      return async () => undefined;
    },
    pollIntervalMs: 60_000,
    settleMs,
  });
  return { watcher, wakeFromOtherProcess: () => wakeFromOtherProcess() };
}

describe('log watcher', () => {
  describe('when many subscriptions wait', () => {
    it('probes the log once per wake-up, not once per subscription', async () => {
      let appended = false;
      let head: string | null = null;
      let probes = 0;
      const { watcher, wakeFromOtherProcess } = watcherOver(async () => {
        probes += 1;
        if (appended) head = '10-1';
        return { heldBack: false };
      });
      const signal = new AbortController().signal;
      await Promise.all(Array.from({ length: 50 }, () => watcher.acquire()));
      const waiting = Array.from({ length: 50 }, () => watcher.waitUntil(() => head !== null, signal));
      await sleep(10);
      expect(probes).toBe(1);

      appended = true;
      wakeFromOtherProcess();
      await Promise.all(waiting);
      expect(probes).toBe(2);
      for (let i = 0; i < 50; i++) watcher.release();
    });
  });

  describe('when committed events are held back by an older open transaction', () => {
    it('re-polls within milliseconds, backing off while the transaction stays open', async () => {
      let probes = 0;
      let open = true;
      let head: string | null = null;
      const { watcher, wakeFromOtherProcess } = watcherOver(async () => {
        probes += 1;
        if (open) return { heldBack: true };
        head = '7-1';
        return { heldBack: false };
      });
      await watcher.acquire();
      const waiting = watcher.waitUntil(() => head !== null, new AbortController().signal);
      await sleep(300);
      // 2, 4, 8, 16, 32, then every 50 ms: a handful of probes, not a spin.
      expect(probes).toBeGreaterThanOrEqual(6);
      expect(probes).toBeLessThanOrEqual(14);
      open = false;
      const started = Date.now();
      await waiting;
      expect(Date.now() - started).toBeLessThan(200);
      wakeFromOtherProcess();
      watcher.release();
    });
  });

  describe('when a write of this process that held events back ends', () => {
    it('probes at once instead of at the next re-poll, and not at all when nothing was held back', async () => {
      jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
      try {
        let probes = 0;
        let open = true;
        let head: string | null = null;
        const { watcher } = watcherOver(async () => {
          probes += 1;
          if (open) return { heldBack: true };
          head = '7-1';
          return { heldBack: false };
        });
        await watcher.acquire();
        const waiting = watcher.waitUntil(() => head !== null, new AbortController().signal);
        await flushEventLoop();
        expect(probes).toBe(1); // held back; the re-poll timer never fires here (fake time stands still)

        open = false;
        watcher.holderEnded();
        await waiting;
        expect(probes).toBe(2);

        watcher.holderEnded(); // the last probe found nothing held back
        await flushEventLoop();
        expect(probes).toBe(2);
        watcher.release();
      } finally {
        jest.useRealTimers();
      }
    });
  });

  describe('when the probe fails', () => {
    it('fails every waiting subscription with the error', async () => {
      const failure = new Error('connection refused');
      const { watcher } = watcherOver(async () => {
        throw failure;
      });
      await watcher.acquire();
      await watcher.acquire();
      const signal = new AbortController().signal;
      const outcomes = await Promise.allSettled([watcher.waitUntil(() => false, signal), watcher.waitUntil(() => false, signal)]);
      expect(outcomes).toEqual([
        { status: 'rejected', reason: failure },
        { status: 'rejected', reason: failure },
      ]);
      watcher.release();
      watcher.release();
    });
  });

  describe('when the subscription is aborted while waiting', () => {
    it('lets it go at once', async () => {
      const { watcher } = watcherOver(async () => ({ heldBack: false }));
      await watcher.acquire();
      const controller = new AbortController();
      const waiting = watcher.waitUntil(() => false, controller.signal);
      controller.abort();
      await expect(waiting).resolves.toBeUndefined();
      watcher.release();
    });
  });

  describe('when a burst of appends wakes it', () => {
    it('reads the first append at once and the rest of the burst with one more probe', async () => {
      let appended = 0;
      let seen = 0;
      let probes = 0;
      const { watcher, wakeFromOtherProcess } = watcherOver(async () => {
        probes += 1;
        seen = appended;
        return { heldBack: false };
      }, 30);
      await watcher.acquire();
      const signal = new AbortController().signal;
      await watcher.waitUntil(() => true, signal);
      const waiting = watcher.waitUntil(() => seen === 5, signal);
      await sleep(50); // the first wait's own probe
      const before = probes;
      for (let n = 0; n < 5; n++) {
        appended += 1;
        wakeFromOtherProcess();
      }
      await waiting;
      expect(probes - before).toBe(2);
      watcher.release();
    });

    it('probes a lone append at once, and waits settleMs while appends stream in', async () => {
      let probes = 0;
      let appended = 0;
      let seen = 0;
      const { watcher, wakeFromOtherProcess } = watcherOver(async () => {
        probes += 1;
        const brought = appended - seen;
        seen = appended;
        return { heldBack: false, appends: brought };
      }, 60_000);
      await watcher.acquire();
      const signal = new AbortController().signal;
      const first = watcher.waitUntil(() => seen === 1, signal);
      await flushEventLoop();
      expect(probes).toBe(1); // the waiter's own, which found nothing

      appended = 1;
      wakeFromOtherProcess();
      await first;
      expect(probes).toBe(2); // one append after a probe that brought none: read without a settle delay

      const second = watcher.waitUntil(() => seen === 3, signal);
      appended = 3;
      wakeFromOtherProcess();
      await second;
      expect(probes).toBe(3); // the probe before brought one append: still at once

      const third = watcher.waitUntil(() => seen === 4, signal);
      appended = 4;
      wakeFromOtherProcess();
      await flushEventLoop();
      expect(probes).toBe(3); // the last probe brought two: this one waits settleMs (60 s here)
      watcher.close();
      await expect(third).rejects.toThrow('closed');
    });
  });

  describe('over a database in this process (alwaysSettle)', () => {
    it('waits settleMs even before reading a lone append', async () => {
      let probes = 0;
      let appended = 0;
      const { watcher, wakeFromOtherProcess } = watcherOver(
        async () => {
          probes += 1;
          return { heldBack: false, appends: 0 };
        },
        60_000,
        true,
      );
      await watcher.acquire();
      const signal = new AbortController().signal;
      const waiting = watcher.waitUntil(() => appended === 1 && probes > 1, signal);
      await flushEventLoop();
      const before = probes;
      appended = 1;
      wakeFromOtherProcess();
      await flushEventLoop();
      expect(probes).toBe(before);
      watcher.close();
      await expect(waiting).rejects.toThrow('closed');
    });
  });

  describe('when a read behind an append brings the tail forward', () => {
    /** A watcher with one subscription waiting for `head`, after its own probe found nothing. */
    async function waitingForHead() {
      const state = { probes: 0, head: null as string | null };
      const { watcher } = watcherOver(async () => {
        state.probes += 1;
        return { heldBack: false };
      });
      await watcher.acquire();
      const waiting = watcher.waitUntil(() => state.head !== null, new AbortController().signal);
      await flushEventLoop();
      expect(state.probes).toBe(1);
      return { watcher, waiting, state };
    }

    it('serves the waiters without a probe of its own', async () => {
      const { watcher, waiting, state } = await waitingForHead();
      state.head = '8-1';
      watcher.served({ heldBack: false });
      await waiting;
      expect(state.probes).toBe(1);
      watcher.release();
    });

    it('probes on when that read stopped short of the head or found events held back', async () => {
      jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
      try {
        const { watcher, waiting, state } = await waitingForHead();
        watcher.served({ heldBack: false, more: true });
        await flushEventLoop();
        expect(state.probes).toBe(2);

        watcher.served({ heldBack: true });
        await flushEventLoop();
        expect(state.probes).toBe(2); // the re-poll waits for its timer
        state.head = '9-1';
        await jest.advanceTimersByTimeAsync(5);
        await waiting;
        expect(state.probes).toBe(3);
        watcher.release();
      } finally {
        jest.useRealTimers();
      }
    });
  });

  describe('when a probe stops short of the head', () => {
    it('probes again without waiting for a wake-up, until the waiters are served', async () => {
      let read = 0;
      let probes = 0;
      const { watcher } = watcherOver(async () => {
        probes += 1;
        read = Math.min(read + 1, 3);
        return { heldBack: false, more: read < 3 };
      });
      await watcher.acquire();
      await watcher.waitUntil(() => read === 3, new AbortController().signal);
      expect(probes).toBe(3);
      watcher.release();
    });
  });
});
