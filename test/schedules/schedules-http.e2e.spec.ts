import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { scheduleStreamId } from '../../src/schedules/domain/schedule-identity.js';
import { eventually, sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Schedules over HTTP on the embedded stack (PGlite, in-process bus, every role in one process,
 * the scheduler among them, on the real clock): a schedule every second starts executions that
 * carry `scheduledBy`; pausing stops its fires, deleting removes it; bad input is refused whole.
 */
describe('schedules over HTTP (embedded)', () => {
  let app: TestApp;
  let api: ApiClient;
  const path = (name: string) => `/v1/workspaces/ws-a/schedules/${name}`;

  beforeAll(async () => {
    // A schedule every second: below the default minimum interval, allowed here.
    app = await startTestApp('pglite', { FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS: '1' });
    api = client(app.url);
    await publish(api, 'tick');
  });
  afterAll(() => app?.close());

  const scheduleEvents = async (name: string) => app.store.readStream(scheduleStreamId('ws-a', name));

  it('runs a schedule every second, shows it, pauses it and deletes it', async () => {
    const body = { workflow: 'tick', cron: '* * * * * *', input: { source: 'cron' }, overlap: 'allow' };
    const created = await api.put(path('every-second'), { token: TOKENS.editorA, body });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'every-second', timezone: 'UTC', overlap: 'allow', catchup: 'last', paused: false });
    expect(created.body.nextFireTimes).toHaveLength(5);
    const gaps = created.body.nextFireTimes
      .slice(1)
      .map((t: string, i: number) => Date.parse(t) - Date.parse(created.body.nextFireTimes[i]));
    expect(gaps).toEqual([1000, 1000, 1000, 1000]);

    // The same body again is a no-op 200: nothing is recorded for it. (Its position need not be
    // the first PUT's: the scheduler may have recorded a fire on the stream in between.)
    const again = await api.put(path('every-second'), { token: TOKENS.editorA, body });
    expect(again.status).toBe(200);
    const recorded = (await scheduleEvents('every-second')).map((e) => e.type);
    expect(recorded[0]).toBe('ScheduleDefined');
    expect(recorded.slice(1).filter((type) => !type.startsWith('ScheduleFire'))).toEqual([]);

    // Executions come, each with the fire that started it.
    const listed = await eventually(
      async () => {
        const res = await api.get('/v1/workspaces/ws-a/executions?workflow=tick', { token: TOKENS.viewerA });
        const scheduled = res.body.executions.filter((e: { scheduledBy: unknown }) => e.scheduledBy !== null);
        return scheduled.length >= 2 && scheduled;
      },
      { what: 'two scheduled executions' },
    );
    expect(listed[0].scheduledBy.schedule).toBe('every-second');
    const detail = await api.get(`/v1/executions/${listed[0].executionId}`, { token: TOKENS.viewerA });
    expect(detail.body.scheduledBy).toEqual(listed[0].scheduledBy);
    expect(detail.body.input).toEqual({ source: 'cron' });

    const shown = await api.get(path('every-second'), { token: TOKENS.viewerA });
    expect(shown.status).toBe(200);
    expect(shown.body.lastFireTime).not.toBeNull();
    expect(shown.body.recentFires[0]).toMatchObject({ outcome: 'started' });
    expect(shown.body.recentFires.map((f: { executionId: string }) => f.executionId)).toContain(listed[0].executionId);

    const list = await api.get('/v1/workspaces/ws-a/schedules', { token: TOKENS.viewerA });
    expect(list.status).toBe(200);
    expect(list.body.schedules.map((s: { name: string }) => s.name)).toContain('every-second');

    // Pausing stops the fires: nothing is fired after the pause is recorded.
    const paused = await api.put(path('every-second'), { token: TOKENS.editorA, body: { ...body, paused: true } });
    expect(paused.status).toBe(200);
    expect(paused.body.nextFireTimes).toEqual([]);
    await sleep(2_500);
    const events = (await scheduleEvents('every-second')).map((e) => e.type);
    expect(events.slice(events.indexOf('SchedulePaused') + 1)).toEqual([]);

    const deleted = await api.request('DELETE', path('every-second'), { token: TOKENS.editorA });
    expect(deleted.status).toBe(204);
    expect((await api.get(path('every-second'), { token: TOKENS.viewerA })).status).toBe(404);
    expect((await api.request('DELETE', path('every-second'), { token: TOKENS.editorA })).status).toBe(404);
    const after = await api.get('/v1/workspaces/ws-a/schedules', { token: TOKENS.viewerA });
    expect(after.body.schedules.map((s: { name: string }) => s.name)).not.toContain('every-second');
  });

  it.each([
    ['an invalid cron expression', { workflow: 'tick', cron: '61 * * * *' }, 'body.cron'],
    ['a cron of four fields', { workflow: 'tick', cron: '* * * *' }, 'body.cron'],
    ['an unknown time zone', { workflow: 'tick', cron: '0 * * * *', timezone: 'Mars/Olympus' }, 'body.timezone'],
    ['an unknown workflow', { workflow: 'nope', cron: '0 * * * *' }, 'body.workflow'],
    ['a bad overlap', { workflow: 'tick', cron: '0 * * * *', overlap: 'queue' }, 'body.overlap'],
    ['a bad catch-up', { workflow: 'tick', cron: '0 * * * *', catchup: 'some' }, 'body.catchup'],
    ['an unknown field', { workflow: 'tick', cron: '0 * * * *', every: 'day' }, 'body'],
  ])('refuses %s with 400 and writes nothing', async (_, body, issuePath) => {
    const res = await api.put(path('refused'), { token: TOKENS.editorA, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(issuePath);
    expect(await scheduleEvents('refused')).toEqual([]);
  });

  it('needs the editor role to change a schedule and the viewer role to read one', async () => {
    const body = { workflow: 'tick', cron: '0 0 * * *' };
    expect((await api.put(path('roles'), { token: TOKENS.operatorA, body })).status).toBe(403);
    expect((await api.put(path('roles'), { token: TOKENS.adminB, body })).status).toBe(404);
    expect((await api.put(path('roles'), { token: TOKENS.editorA, body })).status).toBe(201);
    expect((await api.get(path('roles'), { token: TOKENS.adminB })).status).toBe(404);
    expect((await api.request('DELETE', path('roles'), { token: TOKENS.viewerA })).status).toBe(403);
  });
});
