import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomIds } from '../../src/core/ids.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { systemActor } from '../../src/core/actors.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import { CheckpointStore } from '../../src/postgres/checkpoint-store.js';
import { TimerService, type TimerServiceOptions } from '../../src/timers/application/timer-service.js';
import { TimerTable } from '../../src/timers/infrastructure/timer-table.js';
import { openProcessFixture, type ProcessFixture } from '../dispatch/support/process-fixture.js';
import { STORE_KINDS } from '../support/test-app.js';
import { HOUR, suspendedOnDelay as suspended } from './support/suspended-on-delay.js';

/** The store as the timer process sees it, counting the streams it reads. */
function countingReads(store: EventStore): { store: EventStore; streamsRead: () => number } {
  let streams = 0;
  const counted = new Proxy(store, {
    get(target, property) {
      if (property === 'readStream') {
        return (streamId: string, options?: Parameters<EventStore['readStream']>[1]) => {
          streams += 1;
          return target.readStream(streamId, options);
        };
      }
      if (property === 'readStreams') {
        return (streamIds: readonly string[]) => {
          streams += streamIds.length;
          return target.readStreams!(streamIds);
        };
      }
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: counted, streamsRead: () => streams };
}

/**
 * A timer process reads ahead the executions of timers coming due (within `prepareMs`), so a
 * burst of timers due together fires on states already in memory. The states are hints: one that
 * another process moved meanwhile is read again, and the decider has the last word.
 */
describe.each(STORE_KINDS)('timers read ahead on %s', (kind) => {
  let f: ProcessFixture;
  let table: TimerTable;
  let service: TimerService;
  let streamsRead: () => number;

  beforeAll(async () => {
    f = await openProcessFixture(kind);
    table = await TimerTable.open(f.sql);
    const counting = countingReads(f.store);
    streamsRead = counting.streamsRead;
    // A process of its own: none of the executions the fixture wrote is in its memory.
    service = await timerService(counting.store, new ExecutionStreams(counting.store, f.clock, randomIds), {});
  });
  afterAll(async () => {
    await f.close();
  });
  // Each case starts with no timer left: what one left due fires now.
  afterEach(async () => {
    f.clock.advance(2 * HOUR);
    while ((await service.fireDue()) > 0);
  });

  /** A timer process on the fixture's database, reading ahead 5 s. */
  async function timerService(
    store: EventStore,
    executions: Pick<ExecutionStreams, 'handleBatch' | 'prefetch'>,
    options: TimerServiceOptions,
  ): Promise<TimerService> {
    const deps = { sql: f.sql, timers: table, clock: f.clock, ids: f.ids, logger: f.logger };
    return new TimerService(
      { ...deps, store, executions, checkpoints: await CheckpointStore.open(f.sql) },
      { prepareMs: 5_000, ...options },
    );
  }

  /** An execution suspended on its one-hour delay, its timer in the table. */
  async function suspendedOnDelay(): Promise<string> {
    const executionId = await suspended(f);
    await service.track(await f.events(executionId));
    return executionId;
  }

  const firings = async (executionId: string) => (await f.events(executionId)).filter((e) => e.type === 'TimerFired');

  it('reads the executions of timers due within prepareMs, and fires them without reading again', async () => {
    const soon = [await suspendedOnDelay(), await suspendedOnDelay(), await suspendedOnDelay()];
    f.clock.advance(HOUR / 2);
    const later = await suspendedOnDelay(); // due half an hour after the others
    f.clock.advance(HOUR / 2 - 3_000); // the first three due in 3 s

    expect(await service.prepare()).toBe(3);
    expect(streamsRead()).toBe(3);
    // Read once: a second look finds them in memory.
    await service.prepare();
    expect(streamsRead()).toBe(3);

    f.clock.advance(3_000);
    expect(await service.fireDue()).toBe(3);
    expect(streamsRead()).toBe(3);
    for (const id of soon) expect(await firings(id)).toHaveLength(1);
    expect(await table.of(later)).toHaveLength(1);
    expect(await firings(later)).toEqual([]);
  });

  it('a timer due later than prepareMs, or held by another process, is not read ahead', async () => {
    const executionId = await suspendedOnDelay();
    f.clock.advance(HOUR - 6_000);
    const before = streamsRead();
    expect(await service.prepare()).toBe(0);
    expect(streamsRead()).toBe(before);

    f.clock.advance(2_000); // due in 4 s, but another process claimed it for longer
    const [row] = await table.of(executionId);
    await table.backOff(row, f.clock.now().getTime() + 60_000);
    expect(await service.prepare()).toBe(0);
    expect(streamsRead()).toBe(before);
  });

  it('an execution cancelled elsewhere after it was read ahead does not fire', async () => {
    const cancelled = await suspendedOnDelay();
    const other = await suspendedOnDelay();
    f.clock.advance(HOUR - 2_000);
    expect(await service.prepare()).toBe(2);

    // Another process cancels one of them: the state read ahead is stale now.
    await f.executions.handle(cancelled, {
      type: 'RequestCancel',
      data: { reason: 'no longer needed' },
      metadata: { now: f.clock.now(), actor: systemActor('operator') },
    });
    f.clock.advance(2_000);
    expect(await service.fireDue()).toBe(2);

    expect(await firings(cancelled)).toEqual([]);
    expect((await f.events(cancelled)).map((e) => e.type)).toContain('ExecutionCancelled');
    expect(await firings(other)).toHaveLength(1);
    expect(await table.of(cancelled)).toEqual([]);
  });

  it('the running role reads ahead before the timer is due, and fires it when due', async () => {
    const executionId = await suspendedOnDelay();
    f.clock.advance(HOUR - 3_000);
    const before = streamsRead();
    service.start();
    try {
      // Its first look finds the timer due in 3 s (clock time, which stands still here).
      const deadline = Date.now() + 10_000;
      while (streamsRead() === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(streamsRead()).toBe(before + 1);
      expect(await firings(executionId)).toEqual([]);
    } finally {
      await service.stop();
    }
    f.clock.advance(3_000);
    expect(await service.fireDue()).toBe(1);
    expect(streamsRead()).toBe(before + 1);
    expect(await firings(executionId)).toHaveLength(1);
  });

  it('stops reading ahead once a timer recorded meanwhile is due', async () => {
    // One execution per chunk, the first chunk's read held until the test lets it go.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => undefined;
    const firstRead = new Promise<void>((resolve) => (entered = resolve));
    const streams = new ExecutionStreams(f.store, f.clock, randomIds);
    const gated: Pick<ExecutionStreams, 'handleBatch' | 'prefetch'> = {
      handleBatch: (executionId, commands) => streams.handleBatch(executionId, commands),
      prefetch: async (executionIds) => {
        entered();
        await held;
        return streams.prefetch(executionIds);
      },
    };
    const narrow = await timerService(f.store, gated, { dueBatchSize: 1, name: 'timers-narrow' });
    const sooner = await suspended(f); // due a second before the two below; not in the table yet
    f.clock.advance(1_000);
    const coming = [await suspendedOnDelay(), await suspendedOnDelay()];
    f.clock.advance(HOUR - 3_000); // `sooner` due in 2 s, the two in 3 s

    const reading = narrow.prepare();
    await firstRead; // the read-ahead found the two and is reading the first
    await narrow.track(await f.events(sooner)); // recorded while the first read is under way
    f.clock.advance(2_000); // `sooner` is due now, the two in 1 s
    release();
    expect(await reading).toBe(1);

    f.clock.advance(1_000);
    expect(await narrow.fireDue()).toBe(1);
    expect(await narrow.fireDue()).toBe(1);
    expect(await narrow.fireDue()).toBe(1);
    for (const id of [sooner, ...coming]) expect(await firings(id)).toHaveLength(1);
  });
});
