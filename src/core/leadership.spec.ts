import { afterEach, describe, expect, it } from '@jest/globals';
import { InMemoryLeases, ManualLeaseTime } from '../../test/support/manual-lease-time.js';
import { Leadership, type Term } from './leadership.js';
import { createLogger } from './logger.js';

const TIMINGS = { ttlMs: 3_000, renewMs: 1_000, pollMs: 500 };

/** Two or more contenders for one role on one manual clock; each records its terms. */
function contenders(count: number, options: { failFirstStart?: boolean } = {}) {
  const time = new ManualLeaseTime();
  const store = new InMemoryLeases(time);
  const logger = createLogger({ level: 'silent' });
  const all = Array.from({ length: count }, (_, i) => {
    const terms: { epoch: number; startedAt: number; stoppedAt?: number; term: Term }[] = [];
    const held: boolean[] = [];
    let starts = 0;
    const leadership = new Leadership(
      { store, logger, time, onHeld: (h) => held.push(h) },
      { role: 'dispatcher', holder: `p${i}`, ...TIMINGS },
    );
    leadership.start(async (term) => {
      starts += 1;
      if (options.failFirstStart === true && starts === 1) throw new Error('cannot start');
      const record: (typeof terms)[number] = { epoch: term.grant.epoch, startedAt: time.now(), term };
      terms.push(record);
      return {
        stop: async () => {
          record.stoppedAt = time.now();
        },
      };
    });
    const active = () => terms.filter((t) => t.stoppedAt === undefined);
    return { holder: `p${i}`, leadership, terms, held, active };
  });
  const leaders = () => all.filter((c) => c.active().length > 0);
  return { time, store, all, leaders };
}

describe('Leadership', () => {
  const running: Leadership[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((l) => l.stop()));
  });

  it('elects one of two contenders; the other stands by while the leader renews', async () => {
    const { time, all, leaders } = contenders(2);
    running.push(...all.map((c) => c.leadership));
    await time.advance(100);
    expect(leaders()).toHaveLength(1);
    const [leader] = leaders();
    expect(leader.active()[0].epoch).toBe(1);

    await time.advance(20_000);
    expect(leaders()).toEqual([leader]);
    expect(all.flatMap((c) => c.terms)).toHaveLength(1);
    expect(leader.held).toEqual([true]);
  });

  it('releases the lease on stop, so the standby takes over at its next poll with the next epoch', async () => {
    const { time, all, leaders } = contenders(2);
    running.push(...all.map((c) => c.leadership));
    await time.advance(100);
    const [leader] = leaders();
    const standby = all.find((c) => c !== leader)!;

    const stopping = leader.leadership.stop();
    await time.advance(10);
    await stopping;
    expect(leader.terms[0].stoppedAt).toBeDefined();
    expect(leader.held).toEqual([true, false]);
    const stoppedAt = time.now();
    await time.advance(TIMINGS.pollMs);
    expect(standby.active().map((t) => t.epoch)).toEqual([2]);
    expect(standby.active()[0].startedAt - stoppedAt).toBeLessThanOrEqual(TIMINGS.pollMs);
  });

  it('steps down when it cannot renew within its TTL, before anyone else may take the lease', async () => {
    const { time, store, all, leaders } = contenders(2);
    running.push(...all.map((c) => c.leadership));
    await time.advance(100);
    const [leader] = leaders();
    const standby = all.find((c) => c !== leader)!;
    const cutAt = time.now();
    store.cutOff.add(leader.holder);

    await time.advance(TIMINGS.ttlMs + TIMINGS.pollMs + 100);
    const stoppedAt = leader.terms[0].stoppedAt!;
    expect(stoppedAt - cutAt).toBeLessThanOrEqual(TIMINGS.ttlMs);
    const successor = standby.terms[0];
    expect(successor.epoch).toBe(2);
    expect(successor.startedAt).toBeGreaterThanOrEqual(stoppedAt);
  });

  it('steps down at once when a renewal finds the lease taken over', async () => {
    const { time, store, all, leaders } = contenders(1);
    running.push(...all.map((c) => c.leadership));
    await time.advance(100);
    const [leader] = leaders();
    // Someone took the lease over behind its back (the leader was paused past its TTL).
    store.rows.set('dispatcher/default', { holder: 'other', epoch: 7, expiresAt: time.now() + 60_000 });

    await time.advance(TIMINGS.renewMs + 10);
    expect(leader.active()).toEqual([]);
    expect(leader.held).toEqual([true, false]);
    expect(store.rows.get('dispatcher/default')?.epoch).toBe(7);
  });

  it('stops its work when a fenced write found the lease gone, and contends again', async () => {
    const { time, store, all } = contenders(1);
    running.push(...all.map((c) => c.leadership));
    await time.advance(100);
    const [only] = all;
    const first = only.terms[0];
    store.rows.set('dispatcher/default', { holder: 'other', epoch: 5, expiresAt: time.now() + 2_000 });
    first.term.stepDown();
    await time.advance(10);
    expect(first.stoppedAt).toBeDefined();
    expect(first.term.signal.aborted).toBe(true);

    await time.advance(2_500);
    expect(only.active().map((t) => t.epoch)).toEqual([6]);
  });

  it('gives the lease up when its work fails to start, and tries again', async () => {
    const { time, store, all } = contenders(1, { failFirstStart: true });
    running.push(...all.map((c) => c.leadership));
    await time.advance(100);
    expect(store.rows.get('dispatcher/default')?.expiresAt).toBeLessThanOrEqual(time.now());
    await time.advance(TIMINGS.pollMs * 2);
    expect(all[0].active().map((t) => t.epoch)).toEqual([2]);
  });
});
