import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { eventually } from '../../test/support/eventually.js';
import { ManualLeaseTime } from '../../test/support/manual-lease-time.js';
import { PostgresEventStore } from '../event-store/postgres/postgres-event-store.js';
import { PgliteSqlClient } from '../postgres/pglite-sql-client.js';
import { CatchUpRunner, type CatchUpFeed, type DueLoop } from './catch-up-runner.js';
import { CheckpointThrottle, type Checkpoints } from './checkpointed-subscription.js';
import type { Position, RecordedEvent } from './event-store.port.js';
import { createLogger } from './logger.js';

const logger = createLogger({ level: 'silent' });

/** Checkpoints in memory; `saved` is every save in order. */
class MemoryCheckpoints implements Checkpoints {
  readonly positions = new Map<string, Position>();
  readonly saved: Position[] = [];

  async load(name: string): Promise<Position | null> {
    return this.positions.get(name) ?? null;
  }

  async save(name: string, position: Position): Promise<void> {
    this.positions.set(name, position);
    this.saved.push(position);
  }
}

/** A promise the test resolves by hand. */
function gate(): { promise: Promise<void>; open(): void } {
  let open = () => undefined as void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('CatchUpRunner', () => {
  let client: PgliteSqlClient;
  let store: PostgresEventStore;
  const runners: CatchUpRunner[] = [];

  beforeAll(async () => {
    client = await PgliteSqlClient.open();
    store = await PostgresEventStore.open(client);
  });

  afterAll(async () => {
    await store.close();
    await client.close();
  });

  afterEach(async () => {
    await Promise.all(runners.splice(0).map((runner) => runner.stop()));
  });

  /** Appends one event to its own stream under `prefix`; resolves to its position. */
  async function append(prefix: string, type = 'Happened'): Promise<Position> {
    const { position } = await store.appendToStream(`${prefix}-${randomUUID()}`, [{ id: randomUUID(), type, data: {} }], {
      expectedRevision: 'no_stream',
    });
    return position;
  }

  /**
   * A runner over a stream prefix of the test's own, on manual time; every round is recorded
   * (its time) and asks for `round`'s sleep (default 1 s).
   */
  function runner(
    options: { feed?: Partial<CatchUpFeed>; loop?: Partial<DueLoop>; round?: (signal: AbortSignal) => Promise<number> } = {},
  ) {
    const time = new ManualLeaseTime();
    const prefix = `t${randomUUID().slice(0, 8)}`;
    const seen: RecordedEvent[] = [];
    const rounds: number[] = [];
    const errors: number[] = [];
    const created = new CatchUpRunner({
      feed: { name: prefix, store, streamPrefixes: [`${prefix}-`], handle: (batch) => void seen.push(...batch), ...options.feed },
      loop: {
        round: async (signal) => {
          rounds.push(time.now());
          return options.round === undefined ? 1_000 : options.round(signal);
        },
        onError: (_error, failures) => errors.push(failures),
        ...options.loop,
      },
      logger,
      time,
    });
    runners.push(created);
    return { runner: created, time, prefix, seen, rounds, errors };
  }

  describe('its feed', () => {
    it('hands the handler what follows the stored checkpoint, and reads on from it after a restart', async () => {
      const checkpoints = new MemoryCheckpoints();
      const {
        runner: r,
        prefix,
        seen,
      } = runner({
        feed: {
          checkpoints,
          handle: async (batch) => {
            seen.push(...batch);
            await checkpoints.save(prefix, batch[batch.length - 1].position);
          },
        },
      });
      const first = await append(prefix);
      checkpoints.positions.set(prefix, first);
      const second = await append(prefix);
      r.start();
      await eventually(() => expect(seen.map((e) => e.position)).toEqual([second]));

      await r.stop();
      const third = await append(prefix);
      r.start();
      await eventually(() => expect(seen.map((e) => e.position)).toEqual([second, third]));
    });

    it('reads from the beginning of the log on every start when it keeps no checkpoint', async () => {
      const { runner: r, prefix, seen } = runner();
      const position = await append(prefix);
      r.start();
      await eventually(() => seen.length === 1);
      await r.stop();
      r.start();
      await eventually(() => expect(seen.map((e) => e.position)).toEqual([position, position]));
    });

    it('stores a position the handler skipped at the next round, never while a batch is in hand', async () => {
      const checkpoints = new MemoryCheckpoints();
      let now = 0;
      const throttle = new CheckpointThrottle(1_000, () => now);
      const held = gate();
      let batches = 0;
      const {
        runner: r,
        prefix,
        rounds,
        time,
      } = runner({
        feed: {
          checkpoints,
          throttle,
          handle: async (batch) => {
            batches += 1;
            const last = batch[batch.length - 1].position;
            // The first batch changes nothing (its position waits); the second does, and is held.
            if (batches === 1) {
              expect(throttle.shouldSave(true, last)).toBe(true);
              await checkpoints.save(prefix, last);
              return;
            }
            if (batches === 2) {
              expect(throttle.shouldSave(false, last)).toBe(false);
              return;
            }
            await held.promise;
            if (throttle.shouldSave(true, last)) await checkpoints.save(prefix, last);
          },
        },
      });
      r.start();
      await append(prefix);
      await eventually(() => batches === 1);
      const skipped = await append(prefix);
      await eventually(() => batches === 2);
      const newer = await append(prefix);
      await eventually(() => batches === 3);
      // The skipped position is due now, but the batch after it is in hand: the rounds leave it.
      now = 5_000;
      const before = rounds.length;
      try {
        await time.advance(3_000);
        expect(rounds.length).toBeGreaterThan(before);
        expect(checkpoints.saved).not.toContain(skipped);
      } finally {
        held.open(); // else the stop after the test would wait for the batch in hand
      }
      await eventually(() => expect(checkpoints.positions.get(prefix)).toBe(newer));
      await time.advance(2_000);
      expect(checkpoints.positions.get(prefix)).toBe(newer);
    });

    it('stores a skipped position once its interval passed when no batch is in hand', async () => {
      const checkpoints = new MemoryCheckpoints();
      let now = 0;
      const throttle = new CheckpointThrottle(1_000, () => now);
      const {
        runner: r,
        prefix,
        time,
        seen,
      } = runner({
        feed: {
          checkpoints,
          throttle,
          handle: (batch) => {
            seen.push(...batch);
            throttle.shouldSave(false, batch[batch.length - 1].position);
          },
        },
      });
      throttle.shouldSave(true, '0');
      r.start();
      const position = await append(prefix);
      await eventually(() => seen.length === 1);
      await time.advance(1_000);
      expect(checkpoints.saved).toEqual([]);
      now = 1_000;
      await time.advance(1_000);
      expect(checkpoints.saved).toEqual([position]);
    });
  });

  describe('its loop', () => {
    it('sleeps as long as each round asks, and runs the next at once after a round that asks for 0', async () => {
      const asked = [0, 300];
      const { runner: r, rounds, time } = runner({ round: async () => asked.shift() ?? 1_000 });
      r.start();
      await time.advance(1_500);
      expect(rounds).toEqual([0, 0, 300, 1_300]);
    });

    it('runs the next round at once when woken, and for a due time only when it would sleep past it', async () => {
      const { runner: r, rounds, time } = runner();
      r.start();
      await time.advance(100);
      expect(rounds).toEqual([0]);
      r.wake(2_000); // the sleep ends at 1 000: sooner than that anyway
      await time.advance(100);
      expect(rounds).toEqual([0]);
      r.wake(500);
      await time.advance(10);
      expect(rounds).toEqual([0, 200]);
      r.wake();
      await time.advance(10);
      expect(rounds).toEqual([0, 200, 210]);
    });

    it('keeps a wake-up that comes during a round for the sleep after it', async () => {
      let woken = false;
      const made = runner({
        round: async () => {
          if (!woken) made.runner.wake(400);
          woken = true;
          return 1_000;
        },
      });
      made.runner.start();
      await made.time.advance(500);
      expect(made.rounds).toEqual([0, 400]);
    });

    it('backs off a failing round, doubling, without waking early, then goes back to its own sleeps', async () => {
      let failing = 3;
      const {
        runner: r,
        rounds,
        errors,
        time,
      } = runner({
        loop: { backoff: { initialMs: 100, maxMs: 250 } },
        round: async () => {
          if (failing-- > 0) throw new Error('the table is away');
          return 1_000;
        },
      });
      r.start();
      await time.advance(50);
      r.wake();
      await time.advance(600);
      expect(errors).toEqual([1, 2, 3]);
      expect(rounds).toEqual([0, 100, 300, 550]);
      r.wake();
      await time.advance(10);
      expect(rounds).toEqual([0, 100, 300, 550, 650]);
    });

    it('stops once the round in hand is done, runs no more rounds, and starts again', async () => {
      const inRound = gate();
      let stopSeen: boolean | null = null;
      const {
        runner: r,
        rounds,
        time,
      } = runner({
        round: async (signal) => {
          if (rounds.length === 1) {
            await inRound.promise;
            stopSeen = signal.aborted;
            return 0;
          }
          return 1_000;
        },
      });
      r.start();
      await time.advance(10);
      let stopped = false;
      const stopping = r.stop().then(() => (stopped = true));
      await time.advance(10);
      expect(stopped).toBe(false);
      inRound.open();
      await stopping;
      expect(stopSeen).toBe(true);
      expect(r.started).toBe(false);
      await time.advance(1_000);
      expect(rounds).toHaveLength(1);

      r.start();
      await time.advance(10);
      expect(rounds.length).toBeGreaterThan(1);
    });
  });
});
