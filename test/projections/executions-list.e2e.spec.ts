import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { client, type ApiClient } from '../support/http-client.js';
import { claim, publish, start } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const LIST = '/v1/workspaces/ws-a/executions';

/** `GET /v1/workspaces/:workspaceId/executions`: newest first, filtered, paged by an opaque cursor. */
describe.each(STORE_KINDS)("listing a workspace's executions on %s", (kind) => {
  let t: TestApp;
  let api: ApiClient;
  /** Oldest first, as started. */
  const started: { executionId: string; workflow: string; status: string }[] = [];

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
    await publish(api, 'other');
    for (let i = 0; i < 11; i++) {
      const workflow = i % 3 === 2 ? 'other' : 'chain';
      const { executionId, attemptId } = await start(api, workflow);
      let status = 'queued';
      if (i % 4 === 1) {
        await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA });
        status = 'cancelled';
      } else if (i % 4 === 2) {
        await claim(api, executionId, attemptId);
        status = 'running';
      }
      started.push({ executionId, workflow, status });
    }
  });
  afterAll(() => t?.close());

  const ids = (body: { executions: { executionId: string }[] }) => body.executions.map((e) => e.executionId);
  const newestFirst = (filter: (e: (typeof started)[number]) => boolean = () => true) =>
    [...started]
      .reverse()
      .filter(filter)
      .map((e) => e.executionId);

  it('lists every execution newest first, with a summary of each and the position it reflects', async () => {
    const res = await api.get(LIST, { token: TOKENS.viewerA });
    expect(res.status).toBe(200);
    expect(ids(res.body)).toEqual(newestFirst());
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.position).toEqual(expect.any(String));
    const last = started.at(-1)!;
    expect(res.body.executions[0]).toEqual({
      executionId: last.executionId,
      workspaceId: 'ws-a',
      workflow: { name: last.workflow, revision: 1 },
      workflowRevision: 1,
      status: last.status,
      waitingFor: null,
      scheduledBy: null,
      cancelRequested: last.status === 'cancelled',
      attemptCount: 1,
      startedAt: expect.any(String),
      updatedAt: expect.any(String),
      endedAt: last.status === 'cancelled' ? expect.any(String) : null,
      position: expect.any(String),
    });
  });

  it('pages with an opaque cursor, neither repeating nor skipping', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '?limit=4' : `?limit=4&cursor=${encodeURIComponent(cursor)}`;
      const res = await api.get(LIST + query, { token: TOKENS.viewerA });
      expect(res.status).toBe(200);
      expect(res.body.executions.length).toBeLessThanOrEqual(4);
      seen.push(...ids(res.body));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual(newestFirst());
  });

  it('filters by status (one or several) and by workflow, and pages the filtered list', async () => {
    const get = async (query: string) => (await api.get(LIST + query, { token: TOKENS.viewerA })).body;
    expect(ids(await get('?status=cancelled'))).toEqual(newestFirst((e) => e.status === 'cancelled'));
    expect(ids(await get('?status=queued,running'))).toEqual(newestFirst((e) => e.status !== 'cancelled'));
    expect(ids(await get('?workflow=other'))).toEqual(newestFirst((e) => e.workflow === 'other'));
    expect(ids(await get('?workflow=chain&status=running'))).toEqual(newestFirst((e) => e.workflow === 'chain' && e.status === 'running'));
    const first = await get('?workflow=chain&limit=2');
    const second = await get(`?workflow=chain&limit=2&cursor=${first.nextCursor}`);
    expect([...ids(first), ...ids(second)]).toEqual(newestFirst((e) => e.workflow === 'chain').slice(0, 4));
    expect(ids(await get('?workflow=nothing-like-it'))).toEqual([]);
  });

  it('answers a workspace the caller cannot read with 404, and another workspace only with its own executions', async () => {
    const foreign = await api.get(LIST, { token: TOKENS.adminB });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    const own = await api.get('/v1/workspaces/ws-b/executions', { token: TOKENS.adminB });
    expect(own.status).toBe(200);
    expect(own.body.executions).toEqual([]);
  });

  it.each([
    ['limit=0', 'query.limit'],
    ['limit=201', 'query.limit'],
    ['status=sleeping', 'query.status'],
    ['cursor=%E2%9C%93', 'query.cursor'],
    ['sort=asc', 'query'],
  ])('rejects %s as validation_failed', async (query, path) => {
    const res = await api.get(`${LIST}?${query}`, { token: TOKENS.viewerA });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.issues.some((i: { path: string }) => i.path === path || i.path.startsWith(`${path}.`))).toBe(true);
  });

  it('caps a page at 50 by default', async () => {
    for (let i = 0; i < 45; i++) await api.post('/v1/workspaces/ws-a/workflows/chain/executions', { token: TOKENS.operatorA, body: {} });
    const res = await api.get(LIST, { token: TOKENS.viewerA });
    expect(res.body.executions).toHaveLength(50);
    expect(res.body.nextCursor).not.toBeNull();
    const rest = await api.get(`${LIST}?cursor=${res.body.nextCursor}&limit=200`, { token: TOKENS.viewerA });
    expect(rest.body.executions).toHaveLength(6);
    expect(rest.body.nextCursor).toBeNull();
  });
});
