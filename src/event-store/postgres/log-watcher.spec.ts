import { describe, expect, it } from '@jest/globals';
import { LogWatcher, type LogProbe } from './log-watcher.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function watcherOver(probe: () => Promise<LogProbe>) {
  let wakeFromOtherProcess = () => undefined as void;
  const watcher = new LogWatcher({
    probe,
    listen: async (onWake) => {
      wakeFromOtherProcess = onWake;
      return async () => undefined;
    },
    pollIntervalMs: 60_000,
  });
  return { watcher, wakeFromOtherProcess: () => wakeFromOtherProcess() };
}

describe('log watcher', () => {
  describe('when many subscriptions wait', () => {
    it('probes the log once per wake-up, not once per subscription', async () => {
      let head: string | null = null;
      let probes = 0;
      const { watcher, wakeFromOtherProcess } = watcherOver(async () => {
        probes += 1;
        return { head, heldBack: false };
      });
      const signal = new AbortController().signal;
      await Promise.all(Array.from({ length: 50 }, () => watcher.acquire()));
      const waiting = Array.from({ length: 50 }, () => watcher.waitBeyond(null, signal));
      await sleep(10);
      expect(probes).toBe(1);

      head = '10-1';
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
      const { watcher, wakeFromOtherProcess } = watcherOver(async () => {
        probes += 1;
        return open ? { head: null, heldBack: true } : { head: '7-1', heldBack: false };
      });
      await watcher.acquire();
      const waiting = watcher.waitBeyond(null, new AbortController().signal);
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

  describe('when the probe fails', () => {
    it('fails every waiting subscription with the error', async () => {
      const failure = new Error('connection refused');
      const { watcher } = watcherOver(async () => {
        throw failure;
      });
      await watcher.acquire();
      await watcher.acquire();
      const signal = new AbortController().signal;
      const outcomes = await Promise.allSettled([watcher.waitBeyond(null, signal), watcher.waitBeyond('1-1', signal)]);
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
      const { watcher } = watcherOver(async () => ({ head: null, heldBack: false }));
      await watcher.acquire();
      const controller = new AbortController();
      const waiting = watcher.waitBeyond(null, controller.signal);
      controller.abort();
      await expect(waiting).resolves.toBeUndefined();
      watcher.release();
    });
  });
});
