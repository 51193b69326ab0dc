import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Principal } from '../../src/auth/principal.js';
import type { Clock } from '../../src/core/clock.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { randomIds } from '../../src/core/ids.js';
import { createLogger } from '../../src/core/logger.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import { StartExecutionHandler } from '../../src/executions/application/start-execution.handler.js';
import { executionStreamId, parseExecutionEvent } from '../../src/executions/domain/execution-event.parser.js';
import { ScheduleStreams } from '../../src/schedules/application/schedule-streams.js';
import type { ScheduleDefinition } from '../../src/schedules/domain/schedule.events.js';
import { scheduleStreamId } from '../../src/schedules/domain/schedule-identity.js';
import { Scheduler } from '../../src/scheduler/application/scheduler.js';
import { SecretStreams } from '../../src/secrets/application/secret-streams.js';
import {
  parsePublishBody,
  PublishWorkflowCommand,
  PublishWorkflowHandler,
} from '../../src/workflows/application/publish-workflow.handler.js';
import { WorkflowQueries } from '../../src/workflows/application/workflow.queries.js';
import { WorkspaceStreams } from '../../src/workspaces/application/workspace-streams.js';
import { openTestStore } from '../support/test-app.js';

/**
 * Schedulers against a real Postgres store, each with streams and caches of its own as another
 * process would have, on a clock the test sets: no real waiting.
 */
class SetClock implements Clock {
  constructor(private at: number) {}
  now(): Date {
    return new Date(this.at);
  }
  set(iso: string | number): void {
    this.at = typeof iso === 'number' ? iso : Date.parse(iso);
  }
}

const WS = 'ws-cron';
const editor: Principal = { subject: 'alice', workspaces: new Map([[WS, 'editor']]), global: new Set(), tokenId: 'test' };

describe('schedulers (real Postgres)', () => {
  let store: EventStore;
  let close: () => Promise<void>;
  const clock = new SetClock(Date.parse('2026-01-01T00:00:00.000Z'));

  beforeAll(async () => {
    ({ store, close } = await openTestStore('postgres'));
    const graph = parsePublishBody({ nodes: [{ id: 'only', type: 'noop' }], edges: [] });
    await new PublishWorkflowHandler(store, clock, randomIds).execute(new PublishWorkflowCommand(editor, WS, 'report', graph));
  });
  afterAll(() => close());

  /** A scheduler process of its own: its own streams, caches and start handler, on the shared store and clock. */
  function aScheduler(): Scheduler {
    const executions = new ExecutionStreams(store, clock, randomIds);
    const start = new StartExecutionHandler(
      executions,
      new WorkflowQueries(store),
      new SecretStreams(store, clock, randomIds),
      new WorkspaceStreams(store, clock, randomIds),
    );
    return new Scheduler({
      store,
      schedules: new ScheduleStreams(store, clock, randomIds),
      executions,
      start: (command) => start.execute(command),
      clock,
      logger: createLogger({ level: 'silent' }),
    });
  }

  const define = (name: string, definition: Partial<ScheduleDefinition>) =>
    new ScheduleStreams(store, clock, randomIds).put(
      WS,
      name,
      { workflow: 'report', cron: '* * * * * *', timezone: 'UTC', input: { from: name }, overlap: 'allow', catchup: 'none', ...definition },
      false,
      'alice',
    );

  /** What the scheduler would have from its feed: the schedule's stream so far. */
  const feed = async (schedulers: Scheduler[], name: string) => {
    const events = await store.readStream(scheduleStreamId(WS, name));
    for (const scheduler of schedulers) scheduler.observe(events);
  };

  /** Every execution this schedule started, by fire time, from the log. */
  async function startsOf(name: string): Promise<Map<string, string[]>> {
    const started = new Map<string, string[]>();
    for (const recorded of await store.readAll({ after: null, maxCount: 100_000, streamPrefixes: ['execution-'] })) {
      if (recorded.type !== 'ExecutionStarted') continue;
      const event = parseExecutionEvent(recorded);
      if (event.type !== 'ExecutionStarted' || event.data.scheduledBy?.schedule !== name) continue;
      const list = started.get(event.data.scheduledBy.fireTime) ?? [];
      list.push(event.data.executionId);
      started.set(event.data.scheduledBy.fireTime, list);
      expect(recorded.metadata['actor']).toBe(`schedule:${name}`);
      expect(event.data.input).toEqual({ from: name });
    }
    return started;
  }

  it('two schedulers racing start exactly one execution per fire time, and record each fire once', async () => {
    clock.set('2026-01-01T00:00:00.200Z');
    await define('race', { cron: '* * * * * *' });
    const [a, b] = [aScheduler(), aScheduler()];
    const fireTimes = [1, 2, 3, 4, 5, 6].map((s) => `2026-01-01T00:00:0${s}.000Z`);
    for (const [i, fireTime] of fireTimes.entries()) {
      await feed([a, b], 'race');
      // Both look at the same instant (a few ms past the fire time), at once.
      clock.set(Date.parse(fireTime) + 3 * (i % 2));
      await Promise.all([a.tick(), b.tick()]);
    }

    const started = await startsOf('race');
    expect([...started.keys()].sort()).toEqual(fireTimes);
    for (const ids of started.values()) expect(ids).toHaveLength(1);
    const fired = (await store.readStream(scheduleStreamId(WS, 'race'))).filter((e) => e.type === 'ScheduleFired');
    expect(fired.map((e) => (e.data as { fireTime: string }).fireTime)).toEqual(fireTimes);
  });

  it('a fire appended by a scheduler that stopped before starting it is started by the next one, once', async () => {
    clock.set('2026-01-01T01:00:00.200Z');
    await define('orphan', { cron: '* * * * * *' });
    // The decision of a scheduler that stops right after its append.
    clock.set('2026-01-01T01:00:01.000Z');
    const decided = await new ScheduleStreams(store, clock, randomIds).trigger(WS, 'orphan', null, clock.now());
    expect(decided.events.map((e) => e.type)).toEqual(['ScheduleFired']);
    expect((await startsOf('orphan')).size).toBe(0);

    const [a, b] = [aScheduler(), aScheduler()];
    await feed([a, b], 'orphan');
    clock.set('2026-01-01T01:00:02.000Z');
    await Promise.all([a.tick(), b.tick()]);
    const started = await startsOf('orphan');
    expect([...started.keys()].sort()).toEqual(['2026-01-01T01:00:01.000Z', '2026-01-01T01:00:02.000Z']);
    for (const ids of started.values()) expect(ids).toHaveLength(1);
  });

  it('overlap skip: a fire is skipped while the last execution runs, and fires again once retention removed it', async () => {
    clock.set('2026-01-01T02:00:00.200Z');
    await define('expiring', { cron: '* * * * * *', overlap: 'skip' });
    const scheduler = aScheduler();
    const tickAt = async (iso: string) => {
      await feed([scheduler], 'expiring');
      clock.set(iso);
      await scheduler.tick();
    };
    await tickAt('2026-01-01T02:00:01.000Z');
    // No worker runs here: the first execution is still running at the next fire time.
    await tickAt('2026-01-01T02:00:02.000Z');
    const first = [...(await startsOf('expiring')).values()].flat();
    expect(first).toHaveLength(1);

    // Retention deletes an ended execution's stream; the schedule must not wait for it forever.
    const stream = executionStreamId(first[0]);
    const events = await store.readStream(stream);
    await store.deleteStream(stream, { expectedRevision: events[events.length - 1].revision });
    await tickAt('2026-01-01T02:00:03.000Z');

    const started = await startsOf('expiring');
    expect([...started.keys()].sort()).toEqual(['2026-01-01T02:00:03.000Z']);
    const decided = (await store.readStream(scheduleStreamId(WS, 'expiring'))).map((e) => [
      e.type,
      (e.data as { fireTime?: string }).fireTime,
    ]);
    expect(decided.slice(1)).toEqual([
      ['ScheduleFired', '2026-01-01T02:00:01.000Z'],
      ['ScheduleFireSkipped', '2026-01-01T02:00:02.000Z'],
      ['ScheduleFired', '2026-01-01T02:00:03.000Z'],
    ]);
  });

  /** Moves the clock minute by minute through [from, to) and lets the scheduler look each time. */
  async function walk(scheduler: Scheduler, names: string[], from: string, to: string) {
    for (let t = Date.parse(from); t < Date.parse(to); t += 60_000) {
      clock.set(t);
      for (const name of names) await feed([scheduler], name);
      await scheduler.tick();
    }
  }
  const berlin = (iso: string) =>
    new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', dateStyle: 'short', timeStyle: 'short', hour12: false }).format(
      new Date(iso),
    );

  it('across the March daylight-saving change, 30 2 * * * and hourly fire at the right local times (Europe/Berlin)', async () => {
    clock.set('2026-03-27T12:00:00.000Z');
    await define('dst-march-daily', { cron: '30 2 * * *', timezone: 'Europe/Berlin' });
    await define('dst-march-hourly', { cron: '0 * * * *', timezone: 'Europe/Berlin' });
    const scheduler = aScheduler();
    await walk(scheduler, ['dst-march-daily', 'dst-march-hourly'], '2026-03-28T22:30:00.000Z', '2026-03-29T04:01:00.000Z');

    expect([...(await startsOf('dst-march-daily')).keys()].sort()).toEqual(['2026-03-29T01:00:00.000Z']); // 03:00 CEST: 02:30 does not exist
    const hourly = [...(await startsOf('dst-march-hourly')).keys()].sort();
    expect(hourly.map(berlin)).toEqual([
      '29/03/2026, 00:00',
      '29/03/2026, 01:00',
      '29/03/2026, 03:00',
      '29/03/2026, 04:00',
      '29/03/2026, 05:00',
      '29/03/2026, 06:00',
    ]);
  });

  it('across the October daylight-saving change, 30 2 * * * fires once and hourly fires on both 02:00 (Europe/Berlin)', async () => {
    clock.set('2026-10-23T12:00:00.000Z');
    await define('dst-october-daily', { cron: '30 2 * * *', timezone: 'Europe/Berlin' });
    await define('dst-october-hourly', { cron: '0 * * * *', timezone: 'Europe/Berlin' });
    const scheduler = aScheduler();
    await walk(scheduler, ['dst-october-daily', 'dst-october-hourly'], '2026-10-24T22:30:00.000Z', '2026-10-25T03:01:00.000Z');

    expect([...(await startsOf('dst-october-daily')).keys()].sort()).toEqual(['2026-10-25T00:30:00.000Z']); // 02:30 CEST, once
    const hourly = [...(await startsOf('dst-october-hourly')).keys()].sort();
    expect(hourly).toEqual([
      '2026-10-24T23:00:00.000Z',
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T03:00:00.000Z',
    ]);
    expect(hourly.map(berlin)).toEqual([
      '25/10/2026, 01:00',
      '25/10/2026, 02:00',
      '25/10/2026, 02:00',
      '25/10/2026, 03:00',
      '25/10/2026, 04:00',
    ]);
  });
});
