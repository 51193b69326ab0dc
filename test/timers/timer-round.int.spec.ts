import { randomUUID } from 'node:crypto';
import { systemActor } from '../../src/core/actors.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CheckpointStore } from '../../src/postgres/checkpoint-store.js';
import { TimerService } from '../../src/timers/application/timer-service.js';
import { TimerTable, type DueTimer } from '../../src/timers/infrastructure/timer-table.js';
import { openProcessFixture, type ProcessFixture } from '../dispatch/support/process-fixture.js';
import { STORE_KINDS } from '../support/test-app.js';
import { HOUR, suspendedOnDelay as suspended } from './support/suspended-on-delay.js';

/**
 * Who removes a fired timer's row: a round removes the rows it claimed, once it has settled them,
 * in one statement; the table's keeper (the subscription of the log) removes the others, such as
 * those another timer process fired, and leaves the round's to it.
 */
describe.each(STORE_KINDS)('the rows of a firing round on %s', (kind) => {
  let f: ProcessFixture;
  let table: TimerTable;
  let service: TimerService;
  let removing: () => void;
  let roundRemoves: Promise<void>;
  let release: () => void;

  beforeAll(async () => {
    f = await openProcessFixture(kind);
    const real = await TimerTable.open(f.sql);
    // The round's delete waits until the test lets it go: meanwhile the round is under way.
    const gate = new Promise<void>((resolve) => (release = resolve));
    roundRemoves = new Promise<void>((resolve) => (removing = resolve));
    const gated: TimerTable = Object.create(real, {
      removeAll: {
        value: async (timers: readonly DueTimer[]) => {
          removing();
          await gate;
          return real.removeAll(timers);
        },
      },
    });
    table = real;
    service = new TimerService({
      store: f.store,
      executions: f.executions,
      sql: f.sql,
      checkpoints: await CheckpointStore.open(f.sql),
      timers: gated,
      clock: f.clock,
      ids: f.ids,
      logger: f.logger,
    });
  });
  afterAll(async () => {
    release();
    await f.close();
  });

  /** An execution suspended on its one-hour delay, its timer in the table (kept from its events). */
  async function suspendedOnDelay(): Promise<string> {
    const executionId = await suspended(f);
    await service.track(await f.events(executionId));
    return executionId;
  }

  const firings = async (executionId: string) => (await f.events(executionId)).filter((e) => e.type === 'TimerFired');

  it('a round removes the rows it fired itself; the keeper leaves them to it, and removes what others fired', async () => {
    const ours = [await suspendedOnDelay(), await suspendedOnDelay()];
    f.clock.advance(HOUR + 1_000);

    // The round claims and fires both, then waits to remove their rows.
    const round = service.fireDue();
    await roundRemoves;
    const fired = (await Promise.all(ours.map(firings))).flat();
    expect(fired).toHaveLength(2);
    // The keeper sees the firings while the round is under way: the rows stay for the round.
    await service.track(fired);
    expect((await Promise.all(ours.map((id) => table.of(id)))).flat()).toHaveLength(2);

    release();
    expect(await round).toBe(2);
    expect((await Promise.all(ours.map((id) => table.of(id)))).flat()).toEqual([]);

    // A timer fired elsewhere (another timer process): the keeper removes its row.
    const theirs = await suspendedOnDelay();
    f.clock.advance(HOUR + 1_000);
    const timerId = (await table.of(theirs))[0]?.timerId;
    expect(timerId).toBeDefined();
    await f.executions.handle(theirs, {
      type: 'FireTimer',
      data: { timerId, nextAttemptId: randomUUID(), jitter: 0 },
      metadata: { now: f.clock.now(), actor: systemActor('timer') },
    });
    await service.track(await firings(theirs));
    expect(await table.of(theirs)).toEqual([]);
    // Each timer fired once.
    for (const id of [...ours, theirs]) expect(await firings(id)).toHaveLength(1);
  });
});
