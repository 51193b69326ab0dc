import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import type { WorkerService } from '../../src/worker/runtime/worker.service.js';
import { MAIN, ROOT } from '../support/secrets/embedded.js';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, startWorkerInGroup, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Sub-workflows on real Postgres and Kafka with the dispatcher (which runs the subworkflow
 * manager) and the worker in processes of their own, SIGKILLed while a child runs.
 */
const quiet = createLogger({ level: 'silent' });

type Event = { type: string; data: Record<string, unknown> };

describe('sub-workflows when processes are killed (real Kafka, real Postgres)', () => {
  const barrier = new BarrierServer();
  const children = new Set<ChildProcess>();
  let scratch: string;
  let bus: KafkaBus;
  let t: TestApp;
  let api: ApiClient;
  let replacement: WorkerService | undefined;

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error('dist/src/main.js is missing: run `npm run build` (npm test does)');
    scratch = mkdtempSync(join(tmpdir(), 'flostra-subworkflows-'));
    await barrier.start();
  });
  afterAll(async () => {
    await barrier.stop();
    rmSync(scratch, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const child of children) child.kill('SIGKILL');
    await replacement?.stop();
    await t?.close();
    await bus?.close();
  });

  /** `node dist/src/main.js` with the given roles, on the app's database and the test broker. */
  async function spawnProcess(roles: string, ready: string): Promise<ChildProcess> {
    const tokensFile = join(scratch, 'tokens.json');
    // Required outside the embedded mode; these processes serve no API, so nobody uses it.
    writeFileSync(tokensFile, JSON.stringify({ tokens: [{ token: 'unused-token-of-the-fault-suite', subject: 'nobody' }] }));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      FLOSTRA_ROLES: roles,
      HOST: '127.0.0.1',
      PORT: '0',
      EVENT_STORE_URL: t.databaseUrl!,
      DATABASE_URL: t.databaseUrl!,
      KAFKA_BROKERS: testKafkaBrokers().join(','),
      FLOSTRA_TOKENS_FILE: tokensFile,
      FLOSTRA_API_URL: t.url,
      FLOSTRA_WORKER_TOKEN: TOKENS.worker,
      FLOSTRA_EGRESS_ALLOW: '127.0.0.1/32',
      LOG_LEVEL: 'info',
    };
    const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let gone = false;
    child.once('exit', () => {
      gone = true;
      children.delete(child);
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    await eventually(
      () => {
        if (gone) throw new Error(`it exited:\n${output}`);
        return output.includes(ready);
      },
      { what: () => `the ${roles} process to start:\n${output}`, timeoutMs: 60_000 },
    );
    return child;
  }

  const view = async (executionId: string) => (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
  const kill = async (child: ChildProcess) => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };

  it('(k) dispatcher and worker killed while a child runs: one child per node try, and the parent finishes once', async () => {
    bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'subworkflow-faults', logger: quiet });
    t = await startTestApp('postgres', { FLOSTRA_ROLES: 'api,ingestor,projector,watchdog' }, { bus });
    api = client(t.url);
    const put = (name: string, graph: object) => api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    expect(
      (
        await put('slow-child', {
          nodes: [{ id: 'call', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/slow-child` } }],
          edges: [],
          retry: { maxAttempts: 3, initialIntervalMs: 0, maxIntervalMs: 0 },
          timeouts: { leaseMs: 3_000 },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await put('slow-parent', {
          nodes: [
            { id: 'run', type: 'subworkflow', config: { workflow: 'slow-child' } },
            { id: 'after', type: 'transform', config: { expression: '{ "child": nodes.run.call.status }' } },
          ],
          edges: [{ from: 'run', to: 'after' }],
        })
      ).status,
    ).toBe(201);

    const dispatcher = await spawnProcess('dispatcher', 'Flostra is listening');
    const worker = await spawnProcess('worker', 'is consuming dispatches');
    const started = await api.post('/v1/workspaces/ws-a/workflows/slow-parent/executions', { token: TOKENS.operatorA, body: {} });
    expect(started.status).toBe(201);
    const parentId = started.body.executionId as string;

    await eventually(() => barrier.heldCount('slow-child') === 1, { what: 'the child to be held at the barrier', timeoutMs: 60_000 });
    await Promise.all([kill(dispatcher), kill(worker)]);
    barrier.release('slow-child');
    // While nothing runs the child's lease expires (the watchdog lives on in the app): its retry waits for a dispatcher.
    await spawnProcess('dispatcher', 'Flostra is listening');
    // A replacement worker in a consumer group of its own, so it need not wait out the dead member's session.
    replacement = await startWorkerInGroup(bus, t.url, 'replacement-workers');

    const done = await eventually(
      async () => {
        const v = await view(parentId);
        return ['succeeded', 'failed', 'timed_out', 'cancelled'].includes(v.status) && v;
      },
      { what: 'the parent to finish', timeoutMs: 90_000 },
    );
    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ after: { child: 200 } });
    expect(done.children).toHaveLength(1);
    const childId = done.children[0].executionId as string;

    const parentEvents = await history(parentId);
    const count = (events: Event[], type: string) => events.filter((e) => e.type === type).length;
    expect(count(parentEvents, 'ChildExecutionStarted')).toBe(1);
    expect(count(parentEvents, 'ChildExecutionEnded')).toBe(1);
    expect(count(parentEvents, 'ExecutionSucceeded')).toBe(1);
    // The kill happened mid-run: the child's first attempt ran out its lease, a retry finished it.
    expect((await view(childId)).attempts.map((a: { status: string }) => a.status)).toEqual(['timed_out', 'succeeded']);
    const childEvents = await history(childId);
    expect(count(childEvents, 'ExecutionStarted')).toBe(1);
    expect(count(childEvents, 'ExecutionSucceeded')).toBe(1);
    // No other execution names this parent.
    const { rows } = await t.readModelSql.query<{ n: string }>(
      'select count(*) as n from read_models.executions where parent_execution_id = $1',
      [parentId],
    );
    expect(Number(rows[0].n)).toBe(1);

    // The manager reads the whole log again from the start: every step is a replay, nothing is appended.
    const before = (await t.store.headPosition())!;
    for (const child of [...children]) if (child.exitCode === null) await kill(child);
    await t.readModelSql.query(`delete from subscription_checkpoints where name = 'subworkflows'`);
    await spawnProcess('dispatcher', 'Flostra is listening');
    await eventually(
      async () => {
        const { rows: saved } = await t.readModelSql.query<{ position: string }>(
          `select position from subscription_checkpoints where name = 'subworkflows'`,
        );
        return saved[0]?.position === before;
      },
      { what: 'the replaying manager to reach the head of the log', timeoutMs: 30_000 },
    );
    expect(await t.store.headPosition()).toBe(before);
  }, 180_000);

  it('(d) cancelling a parent with three running children cancels all of them, also when the cancel beats their start', async () => {
    bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'subworkflow-cancel', logger: quiet });
    t = await startTestApp('postgres', {}, { bus });
    api = client(t.url);
    // A consumer group of its own: the default one may still list a worker killed by (k).
    replacement = await startWorkerInGroup(bus, t.url, 'cancel-workers');
    const put = (name: string, graph: object) => api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    // A child that waits for a person: it runs until decided or cancelled.
    expect((await put('held-child', { nodes: [{ id: 'sign', type: 'approval' }], edges: [] })).status).toBe(201);
    const fan = { nodes: ['a', 'b', 'c'].map((id) => ({ id, type: 'subworkflow', config: { workflow: 'held-child' } })), edges: [] };
    expect((await put('fan-parent', fan)).status).toBe(201);
    const startParent = async () => {
      const res = await api.post('/v1/workspaces/ws-a/workflows/fan-parent/executions', { token: TOKENS.operatorA, body: {} });
      expect(res.status).toBe(201);
      return res.body.executionId as string;
    };
    const cancel = async (executionId: string) =>
      expect([200, 202]).toContain((await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: {} })).status);
    /** The parent ended cancelled and records every child it asked for as cancelled; each child that started ended cancelled. */
    const allCancelled = async (executionId: string) => {
      const parent = await eventually(
        async () => {
          const v = await view(executionId);
          return (
            v.status === 'cancelled' &&
            v.children.length === 3 &&
            v.children.every((c: { status: string }) => c.status === 'cancelled') &&
            v
          );
        },
        { what: `parent ${executionId} and its three children to be cancelled`, timeoutMs: 30_000 },
      );
      for (const child of parent.children as { executionId: string }[]) {
        const res = await api.get(`/v1/executions/${child.executionId}`, { token: TOKENS.viewerA });
        // A child the cancel beat was never started (404); one that started ended cancelled.
        if (res.status !== 404)
          await eventually(async () => (await view(child.executionId)).status === 'cancelled', `${child.executionId} cancelled`);
      }
    };

    // Three children waiting for their approvals, then the cancel.
    const settled = await startParent();
    await eventually(
      async () => {
        const v = await view(settled);
        if (v.children?.length !== 3) return false;
        const children = await Promise.all(v.children.map((c: { executionId: string }) => view(c.executionId)));
        return children.every((c) => c.status === 'awaiting_approval');
      },
      { what: 'three children awaiting approval', timeoutMs: 30_000 },
    );
    await cancel(settled);
    await allCancelled(settled);

    // The cancel sent as soon as the parent asked for its children: it may come before their start.
    const hurried = await startParent();
    await eventually(async () => (await history(hurried)).some((e) => e.type === 'ChildExecutionStarted'), {
      what: 'the parent to ask for a child',
      timeoutMs: 30_000,
      intervalMs: 5,
    });
    await cancel(hurried);
    await allCancelled(hurried);
  }, 120_000);
});
