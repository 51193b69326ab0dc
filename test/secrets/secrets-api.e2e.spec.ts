import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { ALL_STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Secrets by reference over HTTP (docs/api.md, "Secrets"): put, list and delete without a value
 * ever coming back; bad input refused with nothing written; a start whose graph references a
 * missing secret refused with nothing appended; a worker's resolution answered to the live claim
 * only, and recording nothing.
 */

const secretsPath = (name?: string, workspace = 'ws-a') => `/v1/workspaces/${workspace}/secrets${name === undefined ? '' : `/${name}`}`;

/** An http node that uses two secrets; no worker runs in these tests, so it is never called. */
const usingSecrets = {
  nodes: [
    {
      id: 'call',
      type: 'http',
      config: {
        method: 'POST',
        url: 'https://api.example.com/orders?key={{secret:API_KEY}}',
        headers: { Authorization: 'Bearer {{secret:TOKEN}}' },
        body: { note: 'no secret here' },
      },
    },
  ],
  edges: [],
};

describe.each(ALL_STORE_KINDS)('secrets over HTTP (%s)', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  const value = `value-${randomBytes(16).toString('hex')}`;

  beforeAll(async () => {
    t = await startTestApp(kind, { FLOSTRA_SECRETS_KEY: randomBytes(32).toString('base64') });
    api = client(t.url);
  });
  afterAll(() => t?.close());

  const put = (name: string, body: unknown, token: string = TOKENS.adminA, workspace = 'ws-a') =>
    api.put(secretsPath(name, workspace), { token, body });
  const rowCount = async () => Number((await t.readModelSql.query<{ n: string }>('select count(*) as n from secret_values')).rows[0].n);

  describe('put, list and delete', () => {
    it('stores version 1, then the next version, and never answers the value', async () => {
      const first = await put('DB.password-1', { value });
      expect(first.status).toBe(201);
      expect(first.body).toEqual({ name: 'DB.password-1', version: 1, updatedAt: expect.any(String) });
      const second = await put('DB.password-1', { value: `${value}-2` });
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ name: 'DB.password-1', version: 2 });

      const list = await api.get(secretsPath(), { token: TOKENS.editorA });
      expect(list.status).toBe(200);
      expect(list.body.items).toContainEqual({ name: 'DB.password-1', version: 2, updatedAt: second.body.updatedAt });
      for (const response of [first, second, list]) expect(JSON.stringify(response.body)).not.toContain(value);
    });

    it('keeps one encrypted row per existing secret: a replaced version’s row is removed', async () => {
      const before = await rowCount();
      await put('rotating', { value: 'one' });
      await put('rotating', { value: 'two' });
      await put('rotating', { value: 'three' });
      expect(await rowCount()).toBe(before + 1);
      const { rows } = await t.readModelSql.query<{ ciphertext: Uint8Array }>(
        "select ciphertext from secret_values where name = 'rotating'",
      );
      expect(Buffer.from(rows[0].ciphertext).includes('three')).toBe(false);
    });

    it('deletes, then answers 404 for the missing name', async () => {
      await put('short-lived', { value: 'x' });
      const deleted = await api.request('DELETE', secretsPath('short-lived'), { token: TOKENS.adminA });
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBeNull();
      const again = await api.request('DELETE', secretsPath('short-lived'), { token: TOKENS.adminA });
      expect(again.status).toBe(404);
      expect(again.body.code).toBe('not_found');
      const list = await api.get(secretsPath(), { token: TOKENS.adminA });
      expect(list.body.items.map((i: { name: string }) => i.name)).not.toContain('short-lived');
      // Versions are never reused: the name starts again after the last version it had.
      expect((await put('short-lived', { value: 'y' })).body).toMatchObject({ version: 2 });
    });

    it('gives each of 10 racing puts of one name its own version, in order, and keeps one row', async () => {
      const before = await rowCount();
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => put('raced', { value: `v${i}` })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
      expect(answers.map((a) => a.body.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(await rowCount()).toBe(before + 1);
    });

    it('lets admins write, editors read, and hides another workspace as 404', async () => {
      expect((await put('x', { value: 'v' }, TOKENS.editorA)).status).toBe(403);
      expect((await api.get(secretsPath(), { token: TOKENS.operatorA })).status).toBe(403);
      expect((await api.request('DELETE', secretsPath('DB.password-1'), { token: TOKENS.editorA })).status).toBe(403);
      expect((await api.get(secretsPath(), { token: TOKENS.adminB })).status).toBe(404);
      expect((await put('x', { value: 'v' }, TOKENS.adminB)).status).toBe(404);
      expect((await api.get(secretsPath(), { token: TOKENS.adminB, headers: {} })).body.code).toBe('not_found');
      expect((await api.get(secretsPath(undefined, 'ws-b'), { token: TOKENS.adminB })).body).toEqual({ items: [] });
    });
  });

  describe('bad input', () => {
    it.each([
      ['a name with a space', 'a%20b', { value: 'v' }, /params\.name/],
      ['a name of 129 characters', 'n'.repeat(129), { value: 'v' }, /params\.name/],
      ['a name with a colon', 'a:b', { value: 'v' }, /params\.name/],
      ['an empty value', 'ok', { value: '' }, /body\.value/],
      ['a value over 64 KiB', 'ok', { value: 'é'.repeat(32 * 1024 + 1) }, /body\.value/],
      ['a value that is not text', 'ok', { value: 42 }, /body\.value/],
      ['no value', 'ok', {}, /body\.value/],
      ['an unknown field', 'ok', { value: 'v', extra: 1 }, /body/],
    ])('refuses %s with 400 validation_failed and writes nothing', async (_name, name, body, path) => {
      const head = await t.store.headPosition();
      const rows = await rowCount();
      const response = await put(name, body);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation_failed');
      expect(response.body.issues.map((i: { path: string }) => i.path).join(' ')).toMatch(path);
      expect(await t.store.headPosition()).toBe(head);
      expect(await rowCount()).toBe(rows);
    });

    it('accepts a value of exactly 64 KiB of UTF-8', async () => {
      expect((await put('large', { value: 'é'.repeat(32 * 1024) })).status).toBe(201);
    });
  });

  describe('starting a workflow that references secrets', () => {
    it('is refused with 409 secret_not_found naming the missing ones, and appends nothing', async () => {
      await publish(api, 'needs-secrets', usingSecrets);
      await put('TOKEN', { value: 'token-value' });
      const head = await t.store.headPosition();
      const refused = await api.post('/v1/workspaces/ws-a/workflows/needs-secrets/executions', { token: TOKENS.operatorA, body: {} });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: 'secret_not_found', missing: ['API_KEY'] });
      expect(refused.body.detail).toContain('API_KEY');
      expect(await t.store.headPosition()).toBe(head);
    });

    it('starts once every secret exists; a replay of that start still answers after a secret is deleted', async () => {
      await put('API_KEY', { value: 'api-key-value' });
      const start = () =>
        api.post('/v1/workspaces/ws-a/workflows/needs-secrets/executions', {
          token: TOKENS.operatorA,
          body: {},
          headers: { 'idempotency-key': 'with-secrets' },
        });
      const first = await start();
      expect(first.status).toBe(201);
      await api.request('DELETE', secretsPath('API_KEY'), { token: TOKENS.adminA });
      const replay = await start();
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual(first.body);
      const other = await api.post('/v1/workspaces/ws-a/workflows/needs-secrets/executions', {
        token: TOKENS.operatorA,
        body: {},
        headers: { 'idempotency-key': 'with-secrets-2' },
      });
      expect(other.status).toBe(409);
      await put('API_KEY', { value: 'api-key-value' });
    });
  });

  describe("a worker's resolution", () => {
    let executionId: string;
    let attemptId: string;
    let fencingToken: number;
    const resolve = (body: Record<string, unknown>, token: string = TOKENS.worker, attempt = () => attemptId) =>
      api.post(`/v1/executions/${executionId}/attempts/${attempt()}/secrets`, { token, body });

    beforeAll(async () => {
      await put('API_KEY', { value: 'api-key-value' });
      await put('TOKEN', { value: 'token-value' });
      await put('UNUSED', { value: 'unused-value' });
      const started = await api.post('/v1/workspaces/ws-a/workflows/needs-secrets/executions', { token: TOKENS.operatorA, body: {} });
      executionId = started.body.executionId;
      const view = await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA });
      attemptId = view.body.attempts[0].attemptId;
      const claimed = await api.post(`/v1/executions/${executionId}/attempts/${attemptId}/claim`, {
        token: TOKENS.worker,
        body: { workerId: 'w1' },
      });
      expect(claimed.status).toBe(200);
      fencingToken = claimed.body.fencingToken;
    });

    it('answers the live claim the values of the names its graph references, not-cached, and appends nothing', async () => {
      const head = await t.store.headPosition();
      const answer = await resolve({ workerId: 'w1', fencingToken, names: ['API_KEY', 'TOKEN'] });
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ values: { API_KEY: 'api-key-value', TOKEN: 'token-value' } });
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(await t.store.headPosition()).toBe(head);
    });

    it('refuses a name the graph does not reference with 403, answering nothing', async () => {
      const answer = await resolve({ workerId: 'w1', fencingToken, names: ['API_KEY', 'UNUSED'] });
      expect(answer.status).toBe(403);
      expect(answer.body).toMatchObject({ code: 'forbidden', unreferenced: ['UNUSED'] });
      expect(JSON.stringify(answer.body)).not.toMatch(/api-key-value|unused-value/);
    });

    it('refuses anything but the current claim, and anyone but a worker', async () => {
      expect((await resolve({ workerId: 'w2', fencingToken, names: ['TOKEN'] })).body.code).toBe('stale_attempt');
      expect((await resolve({ workerId: 'w1', fencingToken: fencingToken + 1, names: ['TOKEN'] })).body.code).toBe('stale_attempt');
      const otherAttempt = await resolve({ workerId: 'w1', fencingToken, names: ['TOKEN'] }, TOKENS.worker, () => executionId);
      expect(otherAttempt.status).toBe(409);
      expect(otherAttempt.body.code).toBe('stale_attempt');
      expect((await resolve({ workerId: 'w1', fencingToken, names: ['TOKEN'] }, TOKENS.adminA)).status).toBe(403);
      expect((await resolve({ workerId: 'w1', fencingToken, names: [] })).status).toBe(400);
      expect((await resolve({ workerId: 'w1', fencingToken, names: ['bad name'] })).status).toBe(400);
    });

    it('answers secret_not_found for a secret deleted since the start', async () => {
      await api.request('DELETE', secretsPath('TOKEN'), { token: TOKENS.adminA });
      const answer = await resolve({ workerId: 'w1', fencingToken, names: ['API_KEY', 'TOKEN'] });
      expect(answer.status).toBe(409);
      expect(answer.body).toMatchObject({ code: 'secret_not_found', missing: ['TOKEN'] });
      expect(JSON.stringify(answer.body)).not.toContain('api-key-value');
      await put('TOKEN', { value: 'token-value' });
    });

    it('answers lease_expired once the lease ran out, before any watchdog', async () => {
      t.clock.advance(10 * 60_000);
      const answer = await resolve({ workerId: 'w1', fencingToken, names: ['TOKEN'] });
      expect(answer.status).toBe(409);
      expect(answer.body.code).toBe('lease_expired');
    });
  });
});

describe('an api without a secrets key', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('pglite');
  });
  afterAll(() => t?.close());

  it('refuses to store a secret with 503, writing nothing', async () => {
    const api = client(t.url);
    const head = await t.store.headPosition();
    const response = await api.put(secretsPath('A'), { token: TOKENS.adminA, body: { value: 'v' } });
    expect(response.status).toBe(503);
    expect(response.body.detail).toContain('FLOSTRA_SECRETS_KEY');
    expect(await t.store.headPosition()).toBe(head);
  });
});

describe('a secret deleted after the start, with a worker', () => {
  const barrier = new BarrierServer();
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    await barrier.start();
    t = await startTestApp(
      'pglite',
      { FLOSTRA_SECRETS_KEY: randomBytes(32).toString('hex') },
      { worker: { egressAllow: ['127.0.0.1/32'] } },
    );
    api = client(t.url);
  });
  afterAll(async () => {
    await t?.close();
    await barrier.stop();
  });

  it('fails the node that needs it with secret_not_found, not retried, and the attempt ends', async () => {
    const graph = {
      nodes: [
        { id: 'gate', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/gate` } },
        {
          id: 'call',
          type: 'http',
          config: { method: 'GET', url: `${barrier.url}/echo/call`, headers: { 'X-Key': '{{secret:GONE}}' } },
          retry: { maxAttempts: 3, initialIntervalMs: 0, maxIntervalMs: 0 },
        },
      ],
      edges: [{ from: 'gate', to: 'call' }],
      retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
    };
    await publish(api, 'loses-its-secret', graph);
    await api.put(secretsPath('GONE'), { token: TOKENS.adminA, body: { value: 'soon gone' } });
    const started = await api.post('/v1/workspaces/ws-a/workflows/loses-its-secret/executions', { token: TOKENS.operatorA, body: {} });
    expect(started.status).toBe(201);
    await eventually(() => barrier.heldCount('gate') === 1, 'the first node to be in flight');
    expect((await api.request('DELETE', secretsPath('GONE'), { token: TOKENS.adminA })).status).toBe(204);
    barrier.release('gate');

    const view = await eventually(async () => {
      const body = (await api.get(`/v1/executions/${started.body.executionId}`, { token: TOKENS.viewerA })).body;
      return ['succeeded', 'failed', 'timed_out', 'cancelled'].includes(body.status) ? body : false;
    }, 'the execution to end');
    expect(view).toMatchObject({ status: 'failed', error: { code: 'secret_not_found', retryable: false } });
    expect(view.attempts).toHaveLength(1);
    expect(view.nodes.find((n: { nodeId: string }) => n.nodeId === 'call')).toMatchObject({
      status: 'failed',
      error: { code: 'secret_not_found' },
    });
    expect(barrier.hits.get('call')).toBeUndefined();
  });
});
