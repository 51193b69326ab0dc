import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { client, type ApiClient } from '../support/http-client.js';
import { chainWorkflow, claim, publish, start, view } from '../support/scenario.js';
import { ALL_STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const attemptPath = (e: string, a: string, verb: string) => `/v1/executions/${e}/attempts/${a}/${verb}`;

describe.each(ALL_STORE_KINDS)('the execution lifecycle over HTTP on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
    await publish(api, 'retrying', chainWorkflow({ retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 } }));
  });
  afterAll(() => t?.close());

  describe('publishing a workflow', () => {
    it('returns the latest revision for an identical graph and a new one for a changed graph', async () => {
      const first = await api.put('/v1/workspaces/ws-a/workflows/pub', { token: TOKENS.editorA, body: chainWorkflow() });
      expect(first.status).toBe(201);
      const reordered = { ...chainWorkflow(), nodes: [...chainWorkflow().nodes].reverse() };
      const again = await api.put('/v1/workspaces/ws-a/workflows/pub', { token: TOKENS.editorA, body: reordered });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ workflowId: first.body.workflowId, revision: 1, digest: first.body.digest });
      const changed = await api.put('/v1/workspaces/ws-a/workflows/pub', {
        token: TOKENS.editorA,
        body: chainWorkflow({ edges: [{ from: 'a', to: 'c' }] }),
      });
      expect(changed.status).toBe(201);
      expect(changed.body.revision).toBe(2);
      const got = await api.get('/v1/workspaces/ws-a/workflows/pub?revision=1', { token: TOKENS.viewerA });
      expect(got.body).toMatchObject({ revision: 1, digest: first.body.digest });
    });

    it('needs the editor role', async () => {
      const res = await api.put('/v1/workspaces/ws-a/workflows/pub2', { token: TOKENS.operatorA, body: chainWorkflow() });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('forbidden');
    });
  });

  describe('starting with an Idempotency-Key (promise 2)', () => {
    it('answers the same key and body with the original response, and another body with a conflict', async () => {
      const send = (input: object) =>
        api.post('/v1/workspaces/ws-a/workflows/chain/executions', {
          token: TOKENS.operatorA,
          body: { input },
          headers: { 'idempotency-key': `k-${kind}` },
        });
      const first = await send({ n: 1 });
      expect(first.status).toBe(201);
      expect(first.body).toMatchObject({ status: 'queued', workflowRevision: 1 });
      const again = await send({ n: 1 });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      const other = await send({ n: 2 });
      expect(other.status).toBe(409);
      expect(other.body.code).toBe('idempotency_conflict');
    });
  });

  describe('a worker running an attempt', () => {
    it('claims, heartbeats and completes; the execution succeeds with the output', async () => {
      const { executionId, attemptId } = await start(api, 'chain', { input: { x: 1 } });
      const claimed = await claim(api, executionId, attemptId);
      expect(claimed.status).toBe(200);
      expect(claimed.body).toMatchObject({ fencingToken: 1, input: { x: 1 }, completedNodes: {} });
      expect(claimed.body.workflow.graph.nodes.map((n: { id: string }) => n.id)).toEqual(['a', 'b', 'c']);
      const fence = { workerId: 'worker-1', fencingToken: claimed.body.fencingToken };
      const beat = await api.post(attemptPath(executionId, attemptId, 'heartbeat'), { token: TOKENS.worker, body: fence });
      expect(beat.status).toBe(200);
      expect(beat.body.cancelRequested).toBe(false);
      expect(Date.parse(beat.body.leaseExpiresAt)).toBeGreaterThanOrEqual(Date.parse(claimed.body.leaseExpiresAt));
      const done = await api.post(attemptPath(executionId, attemptId, 'complete'), {
        token: TOKENS.worker,
        body: { ...fence, outcome: 'succeeded', output: { ok: true } },
      });
      expect(done.status).toBe(200);
      expect(done.body.status).toBe('succeeded');
      const v = await view(api, executionId);
      expect(v).toMatchObject({ status: 'succeeded', output: { ok: true }, position: done.body.position });
      expect(v.attempts).toEqual([expect.objectContaining({ attemptId, status: 'succeeded', workerId: 'worker-1' })]);
    });

    it('lets only one worker claim; the loser gets stale_attempt and changes nothing (promise 3)', async () => {
      const { executionId, attemptId } = await start(api, 'chain');
      expect((await claim(api, executionId, attemptId, 'w-1')).status).toBe(200);
      const before = await api.get(`/v1/executions/${executionId}/history`, { token: TOKENS.viewerA });
      const loser = await claim(api, executionId, attemptId, 'w-2');
      expect(loser.status).toBe(409);
      expect(loser.body.code).toBe('stale_attempt');
      const forged = await api.post(attemptPath(executionId, attemptId, 'heartbeat'), {
        token: TOKENS.worker,
        body: { workerId: 'w-2', fencingToken: 1 },
      });
      expect(forged.body.code).toBe('stale_attempt');
      const after = await api.get(`/v1/executions/${executionId}/history`, { token: TOKENS.viewerA });
      expect(after.body).toEqual(before.body);
    });

    it('answers a repeated claim by the same worker with the same claim (a lost reply)', async () => {
      const { executionId, attemptId } = await start(api, 'chain');
      const first = await claim(api, executionId, attemptId, 'w-1');
      const again = await claim(api, executionId, attemptId, 'w-1');
      expect(again.status).toBe(200);
      expect(again.body.fencingToken).toBe(first.body.fencingToken);
      expect(again.body.leaseExpiresAt).toBe(first.body.leaseExpiresAt);
    });

    it('rejects a heartbeat and a completion after the lease expired, before any watchdog ran (promise 4)', async () => {
      const { executionId, attemptId } = await start(api, 'chain');
      const claimed = await claim(api, executionId, attemptId);
      t.clock.advance(31_000); // default lease is 30 s
      const fence = { workerId: 'worker-1', fencingToken: claimed.body.fencingToken };
      const beat = await api.post(attemptPath(executionId, attemptId, 'heartbeat'), { token: TOKENS.worker, body: fence });
      expect(beat.status).toBe(409);
      expect(beat.body.code).toBe('lease_expired');
      const done = await api.post(attemptPath(executionId, attemptId, 'complete'), {
        token: TOKENS.worker,
        body: { ...fence, outcome: 'succeeded' },
      });
      expect(done.body.code).toBe('lease_expired');
      // The refusals recorded nothing. (The watchdog, which sees the same clock, may time the
      // attempt out meanwhile, as it should: its events are not the refused commands'.)
      const types = (await t.store.readStream(`execution-${executionId}`)).map((event) => event.type);
      expect(types).not.toContain('LeaseExtended');
      expect(types).not.toContain('AttemptSucceeded');
      expect((await view(api, executionId)).status).not.toBe('succeeded');
    });

    it('schedules a retry attempt after a retryable failure, and the old claim is stale', async () => {
      const { executionId, attemptId } = await start(api, 'retrying');
      const claimed = await claim(api, executionId, attemptId);
      const fence = { workerId: 'worker-1', fencingToken: claimed.body.fencingToken };
      const failed = await api.post(attemptPath(executionId, attemptId, 'complete'), {
        token: TOKENS.worker,
        body: { ...fence, outcome: 'failed', error: { code: 'boom', message: 'transient' } },
      });
      expect(failed.body.status).toBe('queued');
      const v = await view(api, executionId);
      expect(v.attempts.map((a: { status: string }) => a.status)).toEqual(['failed', 'queued']);
      const late = await api.post(attemptPath(executionId, attemptId, 'heartbeat'), { token: TOKENS.worker, body: fence });
      expect(late.body.code).toBe('stale_attempt');
      const retry = await claim(api, executionId, v.attempts[1].attemptId, 'worker-2');
      expect(retry.body.fencingToken).toBe(2);
    });
  });

  describe('cancelling (promise 7)', () => {
    it('cancels a queued execution at once, and a second cancel is a no-op', async () => {
      const { executionId } = await start(api, 'chain');
      const res = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: { reason: 'no longer needed' } });
      expect(res.status).toBe(202);
      expect(res.body.status).toBe('cancelled');
      const again = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA });
      expect(again.status).toBe(202);
      expect(again.body.position).toBe(res.body.position);
      expect((await view(api, executionId)).attempts[0].status).toBe('cancelled');
    });

    it('tells a running worker through its heartbeat; the worker then completes as cancelled', async () => {
      const { executionId, attemptId } = await start(api, 'chain');
      const claimed = await claim(api, executionId, attemptId);
      const fence = { workerId: 'worker-1', fencingToken: claimed.body.fencingToken };
      const res = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA });
      expect(res.body).toMatchObject({ status: 'running', cancelRequested: true });
      const beat = await api.post(attemptPath(executionId, attemptId, 'heartbeat'), { token: TOKENS.worker, body: fence });
      expect(beat.body.cancelRequested).toBe(true);
      const done = await api.post(attemptPath(executionId, attemptId, 'complete'), {
        token: TOKENS.worker,
        body: { ...fence, outcome: 'cancelled' },
      });
      expect(done.body.status).toBe('cancelled');
    });

    it('refuses to cancel a finished execution', async () => {
      const { executionId, attemptId } = await start(api, 'chain');
      const claimed = await claim(api, executionId, attemptId);
      await api.post(attemptPath(executionId, attemptId, 'complete'), {
        token: TOKENS.worker,
        body: { workerId: 'worker-1', fencingToken: claimed.body.fencingToken, outcome: 'succeeded' },
      });
      const res = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('invalid_state');
    });
  });

  describe('redriving', () => {
    it('schedules a new attempt from cancelled and returns the first snapshot for the same key', async () => {
      const { executionId } = await start(api, 'chain');
      await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA });
      const send = () =>
        api.post(`/v1/executions/${executionId}/redrive`, { token: TOKENS.operatorA, headers: { 'idempotency-key': 'r-1' } });
      const first = await send();
      expect(first.status).toBe(202);
      expect(first.body).toMatchObject({ attemptNumber: 2 });
      // Today's state moves on; the replay still answers with the first snapshot.
      await claim(api, executionId, first.body.attemptId);
      const again = await send();
      expect(again.status).toBe(202);
      expect(again.body).toEqual(first.body);
      const v = await view(api, executionId);
      expect(v.status).toBe('running');
    });

    it('refuses a queued execution', async () => {
      const { executionId } = await start(api, 'chain');
      const res = await api.post(`/v1/executions/${executionId}/redrive`, {
        token: TOKENS.operatorA,
        headers: { 'idempotency-key': 'r-2' },
      });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('invalid_state');
    });
  });

  describe('tenancy from ownership (promise 10)', () => {
    it("answers another workspace's execution with the same 404 as a missing one", async () => {
      const { executionId } = await start(api, 'chain');
      const missing = await api.get('/v1/executions/00000000-0000-4000-8000-000000000000', { token: TOKENS.adminB });
      for (const [method, path] of [
        ['GET', `/v1/executions/${executionId}`],
        ['GET', `/v1/executions/${executionId}/history`],
        ['POST', `/v1/executions/${executionId}/cancel`],
        ['POST', `/v1/executions/${executionId}/redrive`],
      ] as const) {
        const res = await api.request(method, path, { token: TOKENS.adminB, headers: { 'idempotency-key': 'x' } });
        expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: missing.body });
      }
      expect((await view(api, executionId)).status).toBe('queued');
    });

    it('lets a viewer read but not cancel', async () => {
      const { executionId } = await start(api, 'chain');
      expect((await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).status).toBe(200);
      const res = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.viewerA });
      expect(res.status).toBe(403);
    });

    it('keeps operators out of the worker protocol', async () => {
      const { executionId, attemptId } = await start(api, 'chain');
      const res = await api.post(attemptPath(executionId, attemptId, 'claim'), { token: TOKENS.adminA, body: { workerId: 'x' } });
      expect(res.status).toBe(403);
    });
  });

  describe('history', () => {
    it('pages events in order after a position', async () => {
      const { executionId, attemptId } = await start(api, 'chain');
      await claim(api, executionId, attemptId);
      const all = await api.get(`/v1/executions/${executionId}/history`, { token: TOKENS.viewerA });
      expect(all.body.events.map((e: { type: string }) => e.type)).toEqual(['ExecutionStarted', 'AttemptScheduled', 'AttemptClaimed']);
      const page = await api.get(`/v1/executions/${executionId}/history?after=${all.body.events[0].position}&limit=1`, {
        token: TOKENS.viewerA,
      });
      expect(page.body.events.map((e: { type: string }) => e.type)).toEqual(['AttemptScheduled']);
      expect(page.body.nextCursor).toBe(all.body.events[1].position);
    });
  });
});
