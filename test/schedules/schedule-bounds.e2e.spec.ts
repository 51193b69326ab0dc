import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ScheduleStreams } from '../../src/schedules/application/schedule-streams.js';
import { scheduleRegisterStreamId, scheduleStreamId } from '../../src/schedules/domain/schedule-identity.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Promise 13 (docs/architecture.md): a workspace's schedules are bounded in number and in how
 * often they fire. Creates that race for the last places take exactly as many as are left, a
 * refused create writes nothing, and a cron that fires more often than the minimum is refused.
 */
const LIMIT = 3;
const RACERS = 12;
// Once a year: no fire lands on the log while a test compares its head.
const YEARLY = '0 0 1 1 *';

describe.each(STORE_KINDS)('schedule bounds (%s)', (kind) => {
  let app: TestApp;
  let api: ApiClient;
  const path = (name: string) => `/v1/workspaces/ws-a/schedules/${name}`;
  const put = (name: string, cron = YEARLY) => api.put(path(name), { token: TOKENS.editorA, body: { workflow: 'tick', cron } });

  beforeAll(async () => {
    app = await startTestApp(kind, { FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE: String(LIMIT) });
    api = client(app.url);
    await publish(api, 'tick');
  });
  afterAll(() => app?.close());

  it('refuses a cron whose fire times come closer than 60 s, writing nothing', async () => {
    const head = await app.store.headPosition();
    for (const cron of ['* * * * * *', '*/30 * * * * *', '0,59 * * * * *']) {
      const refused = await put('too-often', cron);
      expect({ cron, status: refused.status, code: refused.body.code }).toEqual({ cron, status: 400, code: 'validation_failed' });
      expect(refused.body.issues).toContainEqual({ path: 'body.cron', message: expect.stringMatching(/no closer than 60 s/) });
    }
    expect(await app.store.headPosition()).toBe(head);
    expect(await app.store.readStream(scheduleStreamId('ws-a', 'too-often'))).toEqual([]);
  });

  it(`lets ${RACERS} concurrent creates take exactly ${LIMIT} places; the others are 409 and write nothing`, async () => {
    const names = Array.from({ length: RACERS }, (_, i) => `racer-${i}`);
    const answers = await Promise.all(names.map((name) => put(name)));
    const created = names.filter((_, i) => answers[i].status === 201);
    expect(created).toHaveLength(LIMIT);
    for (const answer of answers.filter((a) => a.status !== 201)) {
      expect(answer.status).toBe(409);
      expect(answer.body).toMatchObject({ code: 'limit_reached', limit: LIMIT, resource: 'schedules' });
    }
    for (const name of names) {
      const events = await app.store.readStream(scheduleStreamId('ws-a', name));
      expect({ name, defined: events.length > 0 }).toEqual({ name, defined: created.includes(name) });
    }
    const register = await app.store.readStream(scheduleRegisterStreamId('ws-a'));
    expect(register.map((e) => (e.data as { name: string }).name).sort()).toEqual([...created].sort());

    // At the bound: another create writes nothing; an edit of one that exists goes on.
    const head = await app.store.headPosition();
    expect((await put('one-more')).status).toBe(409);
    expect(await app.store.headPosition()).toBe(head);
    expect(
      (await api.put(path(created[0]), { token: TOKENS.editorA, body: { workflow: 'tick', cron: YEARLY, paused: true } })).status,
    ).toBe(200);

    // A delete gives the place back.
    expect((await api.request('DELETE', path(created[1]), { token: TOKENS.editorA })).status).toBe(204);
    expect((await put('one-more')).status).toBe(201);
    expect((await put('two-more')).status).toBe(409);
  });

  it('counts the schedules a workspace held before it had a register', async () => {
    const streams = app.app.get(ScheduleStreams, { strict: false });
    const graph = { nodes: [{ id: 'a', type: 'noop' }] };
    expect((await api.put('/v1/workspaces/ws-b/workflows/tick', { token: TOKENS.adminB, body: graph })).status).toBe(201);
    const definition = { workflow: 'tick', cron: YEARLY, timezone: 'UTC', input: {}, overlap: 'skip' as const, catchup: 'last' as const };
    // Defined as they were before the bound: straight on their streams, with no place taken.
    for (const name of ['old-1', 'old-2', 'old-3']) await streams.put('ws-b', name, definition, false, 'bob');
    const putB = (name: string) =>
      api.put(`/v1/workspaces/ws-b/schedules/${name}`, { token: TOKENS.adminB, body: { workflow: 'tick', cron: YEARLY } });

    expect((await putB('new-1')).body).toMatchObject({ status: 409, code: 'limit_reached' });
    expect(await app.store.readStream(scheduleRegisterStreamId('ws-b'))).toEqual([]);
    expect((await api.request('DELETE', '/v1/workspaces/ws-b/schedules/old-1', { token: TOKENS.adminB })).status).toBe(204);
    expect((await putB('new-1')).status).toBe(201);
    expect((await putB('new-2')).status).toBe(409);
  });
});
