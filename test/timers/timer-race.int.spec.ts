import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { EventStore } from '../../src/core/event-store.port.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import type { TimerService } from '../../src/timers/application/timer-service.js';
import { TimerTable } from '../../src/timers/infrastructure/timer-table.js';
import { createTimerService } from '../../src/timers/timers.module.js';
import { openProcessFixture, type ProcessFixture } from '../dispatch/support/process-fixture.js';
import { eventually } from '../support/eventually.js';
import { STORE_KINDS } from '../support/test-app.js';
import { HOUR, suspendedOnDelay as suspended } from './support/suspended-on-delay.js';

const TIMERS = 60;

describe.each(STORE_KINDS)('two timer processes racing on %s', (kind) => {
  let f: ProcessFixture;
  let services: TimerService[] = [];

  beforeAll(async () => {
    f = await openProcessFixture(kind);
  });
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await f.close();
  });

  const suspendedOnDelay = (delays?: string[]) => suspended(f, delays);

  /** Every timer of `ids` (`each` per execution) in the table; then due: each fires once, and each execution goes on once. */
  async function fireAll(ids: string[], each: number): Promise<void> {
    const table = await TimerTable.open(f.sql);
    const rows = async () => (await Promise.all(ids.map((id) => table.of(id)))).flat();
    await eventually(async () => expect(await rows()).toHaveLength(ids.length * each), { what: 'every timer in the table' });

    f.clock.advance(HOUR + 1_000);
    await eventually(
      async () => {
        const fired = await Promise.all(ids.map(async (id) => (await f.types(id)).filter((t) => t === 'TimerFired').length));
        expect(fired).toEqual(ids.map(() => each));
      },
      { what: 'every timer to fire' },
    );
    await eventually(async () => expect(await rows()).toEqual([]), { what: 'the table to empty' });
    for (const id of ids) {
      const types = await f.types(id);
      expect(types.filter((t) => t === 'TimerFired')).toHaveLength(each);
      expect(types.filter((t) => t === 'NodeSucceeded')).toHaveLength(each);
      // The first attempt, and one resume after the last timer fired.
      expect(types.filter((t) => t === 'AttemptScheduled')).toHaveLength(2);
      expect(types.at(-1)).toBe('AttemptScheduled');
    }
  }

  it('fires each timer once, and the executions go on', async () => {
    const ids: string[] = [];
    for (let i = 0; i < TIMERS; i++) ids.push(await suspendedOnDelay());
    // Two processes, each with its own subscription and loop, on one table; small batches and
    // short claims so that they interleave and re-claim each other's rows.
    const deps = { store: f.store, executions: f.executions, sql: f.sql, clock: f.clock, ids: f.ids, logger: f.logger };
    services = await Promise.all(
      ['timers-a', 'timers-b'].map((name) => createTimerService(deps, { name, dueBatchSize: 7, concurrency: 4, claimMs: 1, idleMs: 50 })),
    );
    for (const service of services) service.start();
    await fireAll(ids, 1);
  });

  it('fires several timers of one execution once each, and resumes it once', async () => {
    const ids: string[] = [];
    // The same two processes: the timers of one execution fire in one append, or race if claimed apart.
    for (let i = 0; i < TIMERS / 3; i++) ids.push(await suspendedOnDelay(['pause', 'nap', 'rest']));
    await fireAll(ids, 3);
  });

  it('reads the executions of a due batch in one go, not one by one, when none is in memory', async () => {
    await Promise.all(services.map((s) => s.stop()));
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await suspendedOnDelay());
    // A process that has none of them in memory (a restart during the wait), its reads counted.
    const reads = { one: 0, many: 0 };
    const store: EventStore = Object.create(f.store, {
      readStream: { value: (...args: Parameters<EventStore['readStream']>) => (reads.one++, f.store.readStream(...args)) },
      readStreams: { value: (ids: readonly string[]) => (reads.many++, f.store.readStreams!(ids)) },
    });
    const executions = new ExecutionStreams(store, f.clock, f.ids);
    const deps = { store: f.store, executions, sql: f.sql, clock: f.clock, ids: f.ids, logger: f.logger };
    services = [await createTimerService(deps, { name: 'timers-c', idleMs: 50 })];
    services[0].start();

    await fireAll(ids, 1);
    expect(reads).toEqual({ one: 0, many: 1 });
  });
});
