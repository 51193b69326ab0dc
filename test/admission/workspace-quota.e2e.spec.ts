import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import { createWorker } from '../../src/worker/runtime/create-worker.js';
import type { WorkerService } from '../../src/worker/runtime/worker.service.js';
import { quotaStreamId } from '../../src/workspaces/domain/workspace-identity.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { auditRuns, auditSemaphore } from '../support/workspaces/quota-audit.js';

/**
 * Workspace quotas on the full stack: the app on a real Postgres, dispatch and results through a
 * real Kafka broker, a worker running the attempts (and the cancel and order cases again on the
 * embedded stack). Each execution's run is audited from the
 * log: from its admission (its attempt scheduled) to its end.
 */
const quiet = createLogger({ level: 'silent' });
const FINAL = ['succeeded', 'failed', 'timed_out', 'cancelled'];

/** Tokens per workspace: ws-a has every role, ws-b one admin. */
const AS = {
  'ws-a': { admin: TOKENS.adminA, operator: TOKENS.operatorA, viewer: TOKENS.viewerA },
  'ws-b': { admin: TOKENS.adminB, operator: TOKENS.adminB, viewer: TOKENS.adminB },
} as const;
type Workspace = keyof typeof AS;

const APPROVAL = { nodes: [{ id: 'sign-off', type: 'approval', config: { action: { what: 'hold a slot' } } }] };
const NOOP = { nodes: [{ id: 'n', type: 'noop' }] };

function helpers(api: ApiClient, ws: Workspace) {
  const as = AS[ws];
  const settings = (maxConcurrentExecutions: number | null) =>
    api.put(`/v1/workspaces/${ws}/settings`, { token: as.admin, body: { maxConcurrentExecutions } });
  const publish = async (name: string, graph: object) => {
    const res = await api.put(`/v1/workspaces/${ws}/workflows/${name}`, { token: as.admin, body: graph });
    expect([200, 201]).toContain(res.status);
  };
  const start = async (name: string): Promise<string> => {
    const res = await api.post(`/v1/workspaces/${ws}/workflows/${name}/executions`, { token: as.operator, body: {} });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('queued');
    return res.body.executionId as string;
  };
  const view = async (executionId: string) => {
    const res = await api.get(`/v1/executions/${executionId}`, { token: as.viewer });
    expect(res.status).toBe(200);
    return res.body;
  };
  const until = (executionId: string, status: string, timeoutMs = 60_000) =>
    eventually(
      async () => {
        const v = await view(executionId);
        if (FINAL.includes(v.status) && v.status !== status) throw new Error(`${executionId} ended ${v.status}`);
        return v.status === status && v;
      },
      { what: `execution ${executionId} to be ${status}`, timeoutMs },
    );
  const approve = async (executionId: string) => {
    const pending = (await view(executionId)).pendingApproval;
    const res = await api.post(`/v1/executions/${executionId}/approvals/${pending.nodeId}`, {
      token: as.operator,
      body: { decision: 'approve', actionDigest: pending.actionDigest },
    });
    expect(res.status).toBe(202);
  };
  return { settings, publish, start, view, until, approve };
}

describe('workspace quotas on the full stack (real Postgres, real Kafka)', () => {
  const buses: KafkaBus[] = [];
  const apps: TestApp[] = [];
  const workers: WorkerService[] = [];

  function kafkaBus(): KafkaBus {
    const bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'quota-test', logger: quiet });
    buses.push(bus);
    return bus;
  }

  /** An app on Postgres and Kafka; its worker joins a consumer group of its own, so it never waits out a member another suite left behind. */
  async function startKafkaApp(env: Record<string, string> = {}, databaseUrl?: string, withWorker = true): Promise<TestApp> {
    const bus = kafkaBus();
    const app = await startTestApp('postgres', env, { bus, databaseUrl });
    apps.push(app);
    if (withWorker) {
      const worker = createWorker({
        bus,
        apiUrl: app.url,
        token: TOKENS.worker,
        logger: quiet,
        concurrency: 8,
        egressAllow: [],
        groupId: `quota-workers-${randomUUID()}`,
      });
      workers.push(worker);
      await worker.start();
    }
    return app;
  }

  /** Apps share the broker's ingestor group: one left running would take the next one's results. */
  async function closeApps() {
    for (const worker of workers.splice(0)) await worker.stop();
    for (const app of apps.splice(0).reverse()) await app.close();
    for (const bus of buses.splice(0)) await bus.close();
  }

  // Postgres with Kafka, the embedded stack (PGlite, the in-process bus) that `npm start` runs, and KurrentDB (its double).
  describe.each(['postgres and Kafka', 'PGlite and the in-process bus', 'KurrentDB'])('one app with a worker, on %s', (stack) => {
    let t: TestApp;
    let api: ApiClient;

    beforeAll(async () => {
      if (stack === 'postgres and Kafka') t = await startKafkaApp();
      else {
        t = await startTestApp(stack === 'KurrentDB' ? 'kurrentdb' : 'pglite', {}, { worker: { concurrency: 8 } });
        apps.push(t);
      }
      api = client(t.url);
    }, 120_000);
    afterAll(closeApps);

    /** The workspace's quota semaphore holds exactly these executions' slots. */
    async function holders(ws: Workspace): Promise<string[]> {
      const held = new Map<string, string>();
      for (const event of await t.store.readStream(quotaStreamId(ws))) {
        const data = event.data as { executionId: string; attemptId: string };
        if (event.type === 'SlotGranted') held.set(data.attemptId, data.executionId);
        else held.delete(data.attemptId);
      }
      return [...held.values()];
    }

    /** The admission has handled the run's end: it gave back whatever slot it held. */
    const letGo = (executionId: string) =>
      eventually(
        async () => {
          const { rows } = await t.readModelSql.query<{ status: string }>('select status from admission_queue where execution_id = $1', [
            executionId,
          ]);
          return rows.length > 0 && rows.every((row) => row.status === 'released');
        },
        { what: `the admission to let ${executionId} go` },
      );

    it('reads and changes the settings, refusing bad values and callers without the role, writing nothing then', async () => {
      const path = '/v1/workspaces/ws-a/settings';
      const initial = await api.get(path, { token: TOKENS.viewerA });
      expect(initial.status).toBe(200);
      expect(initial.body).toEqual({
        workspaceId: 'ws-a',
        maxConcurrentExecutions: null,
        maxExecutionsPerTree: null,
        updatedAt: null,
        updatedBy: null,
        position: null,
      });

      for (const body of [
        { maxConcurrentExecutions: 0 },
        { maxConcurrentExecutions: 100_001 },
        { maxConcurrentExecutions: 2.5 },
        { maxConcurrentExecutions: '5' },
        {},
        { maxConcurrentExecutions: 5, other: 1 },
        { maxConcurrentExecutions: 5, maxExecutionsPerTree: 0 },
      ]) {
        const res = await api.put(path, { token: TOKENS.adminA, body });
        expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
      }
      expect((await api.put(path, { token: TOKENS.operatorA, body: { maxConcurrentExecutions: 5 } })).body).toMatchObject({
        status: 403,
        code: 'forbidden',
        requiredRole: 'admin',
      });
      expect((await api.put(path, { token: TOKENS.adminB, body: { maxConcurrentExecutions: 5 } })).status).toBe(404);
      expect((await api.get(path, { token: TOKENS.adminB })).status).toBe(404);
      expect(await t.store.readStream('workspace-ws-a')).toEqual([]);

      const set = await api.put(path, { token: TOKENS.adminA, body: { maxConcurrentExecutions: 3 } });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ workspaceId: 'ws-a', maxConcurrentExecutions: 3, updatedBy: 'alice' });
      const again = await api.put(path, { token: TOKENS.adminA, body: { maxConcurrentExecutions: 3 } });
      expect(again.body).toEqual(set.body);
      expect((await api.get(path, { token: TOKENS.viewerA })).body).toEqual(set.body);
      const removed = await api.put(path, { token: TOKENS.adminA, body: { maxConcurrentExecutions: null } });
      expect(removed.body).toMatchObject({ maxConcurrentExecutions: null, updatedBy: 'alice' });
      expect((await t.store.readStream('workspace-ws-a')).map((e) => (e.data as { settings: unknown }).settings)).toEqual([
        { maxConcurrentExecutions: 3, maxExecutionsPerTree: null },
        { maxConcurrentExecutions: null, maxExecutionsPerTree: null },
      ]);
    });

    it('(d) with the bound at 1, runs one at a time, in the order they were started, showing what they wait for', async () => {
      const ws = helpers(api, 'ws-a');
      expect((await ws.settings(1)).status).toBe(200);
      await ws.publish('hold', APPROVAL);
      await ws.publish('quick', NOOP);
      const hold = await ws.start('hold');
      await ws.until(hold, 'awaiting_approval');

      const keyed = await api.post('/v1/workspaces/ws-a/workflows/quick/executions', {
        token: TOKENS.operatorA,
        body: {},
        headers: { 'idempotency-key': 'waits-1' },
      });
      expect(keyed.status).toBe(201);
      const replay = await api.post('/v1/workspaces/ws-a/workflows/quick/executions', {
        token: TOKENS.operatorA,
        body: {},
        headers: { 'idempotency-key': 'waits-1' },
      });
      expect({ status: replay.status, body: replay.body }).toEqual({ status: 200, body: keyed.body });
      const quick: string[] = [keyed.body.executionId];
      for (let i = 0; i < 4; i++) quick.push(await ws.start('quick'));
      for (const id of quick) expect(await ws.view(id)).toMatchObject({ status: 'queued', waitingFor: 'workspace_quota', attempts: [] });
      expect(await ws.view(hold)).toMatchObject({ status: 'awaiting_approval', waitingFor: null });
      const listed = await api.get('/v1/workspaces/ws-a/executions?status=queued', { token: TOKENS.viewerA });
      expect(listed.status).toBe(200);
      expect(listed.body.executions.map((e: { executionId: string; waitingFor: string }) => [e.executionId, e.waitingFor])).toEqual(
        [...quick].reverse().map((id) => [id, 'workspace_quota']),
      );

      await ws.approve(hold);
      for (const id of quick) expect(await ws.until(id, 'succeeded')).toMatchObject({ waitingFor: null });
      await ws.until(hold, 'succeeded');

      const { runs, maxConcurrent } = await auditRuns(t.store, 'ws-a');
      expect(maxConcurrent).toBe(1);
      const order = [...runs].sort((a, b) => (a.admitted < b.admitted ? -1 : 1)).map((run) => run.executionId);
      expect(order).toEqual([hold, ...quick]);
      expect((await auditSemaphore(t.store, 'ws-a')).maxHeld).toBe(1);
    }, 120_000);

    it('(c) cancelling a waiting execution frees nothing and takes nothing; a redrive waits for a slot again', async () => {
      const ws = helpers(api, 'ws-b');
      await ws.settings(2);
      await ws.publish('hold', APPROVAL);
      await ws.publish('quick', NOOP);
      const holds = [await ws.start('hold'), await ws.start('hold')];
      for (const id of holds) await ws.until(id, 'awaiting_approval');
      const [q3, q4, q5] = [await ws.start('quick'), await ws.start('quick'), await ws.start('quick')];

      const cancel = await api.post(`/v1/executions/${q4}/cancel`, { token: TOKENS.adminB, body: { reason: 'not needed' } });
      expect(cancel.status).toBe(202);
      expect(cancel.body.status).toBe('cancelled');
      expect(await ws.view(q4)).toMatchObject({ status: 'cancelled', waitingFor: null, attempts: [] });
      await letGo(q4);
      // Nothing freed (the others still wait) and nothing taken (the two holds keep the slots).
      for (const id of [q3, q5]) expect(await ws.view(id)).toMatchObject({ status: 'queued', waitingFor: 'workspace_quota' });
      expect((await holders('ws-b')).sort()).toEqual([...holds].sort());
      const quota = await t.store.readStream(quotaStreamId('ws-b'));
      expect(quota.filter((e) => (e.data as { executionId: string }).executionId === q4)).toEqual([]);

      // Redriven while both slots are held: it waits again, behind q5.
      const redrive = await api.post(`/v1/executions/${q4}/redrive`, {
        token: TOKENS.adminB,
        body: {},
        headers: { 'idempotency-key': 'q4-again' },
      });
      expect(redrive.status).toBe(202);
      const again = await api.post(`/v1/executions/${q4}/redrive`, {
        token: TOKENS.adminB,
        body: {},
        headers: { 'idempotency-key': 'q4-again' },
      });
      expect({ status: again.status, body: again.body }).toEqual({ status: 202, body: redrive.body });
      expect(await ws.view(q4)).toMatchObject({ status: 'queued', waitingFor: 'workspace_quota' });

      await ws.approve(holds[0]);
      for (const id of [q3, q5, q4]) await ws.until(id, 'succeeded');
      await ws.approve(holds[1]);
      await ws.until(holds[1], 'succeeded');

      const { maxConcurrent } = await auditRuns(t.store, 'ws-b');
      expect(maxConcurrent).toBeLessThanOrEqual(2);
      // First in, first out is the order of the grants; runs granted in one pass (the two holds,
      // when both slots were free) have their attempts scheduled concurrently.
      const semaphore = await auditSemaphore(t.store, 'ws-b');
      expect(semaphore.granted).toEqual([...holds, q3, q5, q4]);
      expect(semaphore.maxHeld).toBeLessThanOrEqual(2);
    }, 120_000);
  });

  describe('two app processes on one store', () => {
    afterAll(closeApps);

    it('(a) 100 concurrent starts against a bound of 5, through two api processes each admitting: never 6 at once, all succeed', async () => {
      const one = await startKafkaApp();
      // A second process on the same event store and read models: api, dispatcher (so admission), projector, watchdog.
      const two = await startKafkaApp({ FLOSTRA_ROLES: 'api,dispatcher,projector,watchdog' }, one.databaseUrl!, false);
      const apis = [client(one.url), client(two.url)];
      expect((await helpers(apis[1], 'ws-a').settings(5)).status).toBe(200);
      await helpers(apis[0], 'ws-a').publish('burst', {
        nodes: [
          { id: 'work', type: 'delay', config: { ms: 200 } },
          { id: 'done', type: 'noop' },
        ],
        edges: [{ from: 'work', to: 'done' }],
      });

      const started = await Promise.all(Array.from({ length: 100 }, (_, i) => helpers(apis[i % 2], 'ws-a').start('burst')));
      expect(new Set(started).size).toBe(100);

      let statuses: Record<string, number> = {};
      await eventually(
        async () => {
          const res = await apis[0].get('/v1/workspaces/ws-a/executions?limit=200', { token: TOKENS.viewerA });
          statuses = {};
          for (const e of res.body.executions as Array<{ status: string; waitingFor: string | null }>) {
            const key = e.waitingFor === null ? e.status : `${e.status} (${e.waitingFor})`;
            statuses[key] = (statuses[key] ?? 0) + 1;
          }
          for (const status of ['failed', 'timed_out', 'cancelled']) expect(statuses[status]).toBeUndefined();
          return statuses['succeeded'] === 100;
        },
        { what: () => `all 100 executions to succeed (now: ${JSON.stringify(statuses)})`, timeoutMs: 180_000, intervalMs: 500 },
      );

      const { runs, maxConcurrent } = await auditRuns(one.store, 'ws-a');
      expect(runs).toHaveLength(100);
      expect(new Set(runs.map((run) => run.executionId))).toEqual(new Set(started));
      expect(runs.every((run) => run.ended !== null)).toBe(true);
      expect(maxConcurrent).toBeLessThanOrEqual(5);
      const semaphore = await auditSemaphore(one.store, 'ws-a');
      expect(semaphore.maxHeld).toBeLessThanOrEqual(5);
      expect(semaphore.granted).toHaveLength(100);
    }, 240_000);
  });
});
