import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PROJECTION_DEFINITIONS } from '../../projections/projections.registry.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { claim, publish, start } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** `GET /v1/admin/projections` and `POST /v1/admin/projections/:name/rebuild`: system-admin only. */
describe.each(STORE_KINDS)('the projections admin API on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  const admin = { token: TOKENS.systemAdmin };

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
    for (let i = 0; i < 3; i++) {
      const { executionId, attemptId } = await start(api, 'chain');
      await claim(api, executionId, attemptId);
    }
    await t.waitForProjections();
  });
  afterAll(() => t?.close());

  it('shows each read model caught up: version, position, events applied, no lag', async () => {
    const res = await api.get('/v1/admin/projections', admin);
    expect(res.status).toBe(200);
    const head = await t.store.headPosition();
    expect(res.body.projections.map((p: { name: string }) => p.name)).toEqual(['executions', 'timeline', 'audit', 'schedules']);
    // The schedules read model follows schedule streams only: this workload has none.
    const schedules = res.body.projections.find((p: { name: string }) => p.name === 'schedules');
    expect(schedules).toMatchObject({ status: 'live', lag: { events: 0 }, error: null, rebuild: null });
    for (const projection of res.body.projections.filter((p: { name: string }) => p.name !== 'schedules')) {
      expect(projection).toMatchObject({
        version: 1,
        definitionVersion: PROJECTION_DEFINITIONS.find((d) => d.name === projection.name)?.version,
        status: 'live',
        position: head,
        lag: { events: 0, exact: true, seconds: 0 },
        error: null,
        rebuild: null,
        lastRebuild: null,
      });
      // Every log event counts, the workflow's publication too: 1 + 3 × 3.
      expect(projection.eventsApplied).toBe(10);
    }
  });

  it('rebuilds on request: 202 with a rebuildId, then the new version is live with the same content', async () => {
    const before = (await api.get('/v1/workspaces/ws-a/executions', { token: TOKENS.viewerA })).body.executions;
    const res = await api.post('/v1/admin/projections/executions/rebuild', admin);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ rebuildId: expect.stringMatching(/^[0-9a-f-]{36}$/), version: 2 });
    const status = await eventually(
      async () => {
        const current = (await api.get('/v1/admin/projections', admin)).body.projections[0];
        expect(current.lastRebuild?.rebuildId).toBe(res.body.rebuildId);
        return current;
      },
      { what: 'the rebuild to finish', timeoutMs: 5_000, intervalMs: 25 },
    );
    expect(status).toMatchObject({
      name: 'executions',
      version: 2,
      rebuild: null,
      eventsApplied: 10,
      lastRebuild: { rebuildId: res.body.rebuildId, version: 2 },
    });
    expect((await api.get('/v1/workspaces/ws-a/executions', { token: TOKENS.viewerA })).body.executions).toEqual(before);
  });

  it('answers a rebuild of an unknown read model with 404', async () => {
    const res = await api.post('/v1/admin/projections/nothing/rebuild', admin);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it.each([
    ['a workspace admin', TOKENS.adminA],
    ['a worker', TOKENS.worker],
  ])('refuses %s with 403', async (_who, token) => {
    expect((await api.get('/v1/admin/projections', { token })).status).toBe(403);
    const rebuild = await api.post('/v1/admin/projections/timeline/rebuild', { token });
    expect(rebuild.status).toBe(403);
    expect(rebuild.body.code).toBe('forbidden');
  });
});
