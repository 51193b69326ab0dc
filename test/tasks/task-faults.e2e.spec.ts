import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import { createWorker } from '../../src/worker/runtime/create-worker.js';
import type { WorkerService } from '../../src/worker/runtime/worker.service.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const quiet = createLogger({ level: 'silent' });

type Event = { type: string; data: Record<string, unknown> };
interface Polled {
  taskId: string;
  executionId: string;
  nodeId: string;
  fencingToken: number;
}

/** Task queues on the full stack: Postgres, real Kafka, the api's roles and a worker; pollers are plain HTTP clients. */
describe('task queues under faults (Postgres and Kafka)', () => {
  let t: TestApp;
  let api: ApiClient;
  let bus: KafkaBus;
  let worker: WorkerService | undefined;

  beforeAll(async () => {
    bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'task-faults', logger: quiet });
    t = await startTestApp('postgres', {}, { bus });
    api = client(t.url);
  }, 120_000);
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
  });
  afterAll(async () => {
    await t?.close();
    await bus?.close();
  });

  /** A worker in a consumer group of its own, running up to `concurrency` attempts at once. */
  async function startWorker(concurrency: number) {
    worker = createWorker({
      bus,
      apiUrl: t.url,
      token: TOKENS.worker,
      logger: quiet,
      concurrency,
      egressAllow: [],
      groupId: `task-workers-${randomUUID()}`,
    });
    await worker.start();
  }

  async function publish(name: string, graph: object) {
    const put = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    expect([200, 201]).toContain(put.status);
  }
  async function startExecution(name: string, input: object = {}): Promise<string> {
    const started = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: { input } });
    expect(started.status).toBe(201);
    return started.body.executionId as string;
  }
  const view = async (executionId: string) => (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
  const untilStatus = (executionId: string, statuses: string[], timeoutMs = 30_000) =>
    eventually(
      async () => {
        const v = await view(executionId);
        return statuses.includes(v.status) ? v : false;
      },
      { what: `execution ${executionId} to reach ${statuses.join('|')}`, timeoutMs },
    );
  const poll = (queue: string, workerId: string, waitMs: number) =>
    api.post<Polled>(`/v1/workspaces/ws-a/task-queues/${queue}/poll`, { token: TOKENS.taskWorkerA, body: { workerId, waitMs } });
  const complete = (task: Polled, workerId: string, output: unknown) =>
    api.post(`/v1/tasks/${task.taskId}/complete`, {
      token: TOKENS.taskWorkerA,
      body: { workerId, fencingToken: task.fencingToken, outcome: 'succeeded', output },
    });

  it('(a) two pollers, 500 tasks: each task is handed out once and completed once, never to two live leases', async () => {
    await startWorker(16);
    const nodes = [1, 2, 3, 4, 5].map((i) => ({ id: `t${i}`, type: 'task', config: { queue: 'fan', heartbeatTimeoutMs: 60_000 } }));
    await publish('fan-out', { nodes: [{ id: 'root', type: 'noop' }, ...nodes], edges: nodes.map((n) => ({ from: 'root', to: n.id })) });
    const executions = await Promise.all(Array.from({ length: 100 }, () => startExecution('fan-out')));

    const handedTo = new Map<string, string[]>();
    let completed = 0;
    let stop = false;
    const poller = async (workerId: string) => {
      while (!stop) {
        const res = await poll('fan', workerId, 1_000);
        if (res.status === 204) continue;
        expect(res.status).toBe(200);
        const task = res.body;
        handedTo.set(task.taskId, [...(handedTo.get(task.taskId) ?? []), workerId]);
        const done = await complete(task, workerId, { by: workerId, node: task.nodeId });
        expect(done.status).toBe(200);
        completed++;
      }
    };
    const pollers = [poller('poller-1'), poller('poller-2')];
    try {
      await eventually(() => completed >= 500, { what: () => `500 completions (${completed} so far)`, timeoutMs: 90_000 });
      for (const executionId of executions) await untilStatus(executionId, ['succeeded', 'failed'], 60_000);
    } finally {
      stop = true;
      await Promise.all(pollers);
    }

    expect(handedTo.size).toBe(500);
    expect([...handedTo.values()].filter((owners) => owners.length !== 1)).toEqual([]);
    const byPoller = [...handedTo.values()].map((owners) => owners[0]);
    expect(new Set(byPoller)).toEqual(new Set(['poller-1', 'poller-2']));
    for (const executionId of executions.slice(0, 20)) {
      const v = await view(executionId);
      expect(v.status).toBe('succeeded');
      const events = await history(executionId);
      expect(events.filter((e) => e.type === 'TaskClaimed')).toHaveLength(5);
      expect(events.filter((e) => e.type === 'TaskSucceeded')).toHaveLength(5);
      expect(Object.keys(v.output).sort()).toEqual(['t1', 't2', 't3', 't4', 't5']);
    }
  }, 180_000);

  it('(c) a late completion from a superseded poller is refused and changes nothing', async () => {
    await startWorker(4);
    await publish('late', {
      nodes: [
        {
          id: 'slow',
          type: 'task',
          config: { queue: 'late', heartbeatTimeoutMs: 30_000 },
          retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
        },
      ],
    });
    const executionId = await startExecution('late');
    const first = await poll('late', 'poller-a', 10_000);
    expect(first.status).toBe(200);
    // poller-a goes quiet; its lease runs out (the clock moved past it: poller-b's own lease of
    // 30 s then stays live however slowly the checks below run), the watchdog retries the task,
    // poller-b takes it.
    t.clock.advance(31_000);
    const second = await eventually(
      async () => {
        const res = await poll('late', 'poller-b', 1_000);
        return res.status === 200 ? res : false;
      },
      { what: 'the retried task to be handed out', timeoutMs: 30_000 },
    );
    expect(second.body.taskId).not.toBe(first.body.taskId);
    expect(second.body).toMatchObject({ nodeId: 'slow', attempt: 2 });

    const before = await history(executionId);
    const late = await complete(first.body, 'poller-a', { late: true });
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('lease_expired');
    const beat = await api.post(`/v1/tasks/${first.body.taskId}/heartbeat`, {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'poller-a', fencingToken: first.body.fencingToken },
    });
    expect(beat.body.code).toBe('lease_expired');
    // poller-a's token on the new task: not its claim.
    const stolen = await complete({ ...second.body, fencingToken: first.body.fencingToken }, 'poller-a', { late: true });
    expect(stolen.status).toBe(409);
    expect(stolen.body.code).toBe('stale_attempt');
    expect(await history(executionId)).toEqual(before);

    expect((await complete(second.body, 'poller-b', { onTime: true })).status).toBe(200);
    const done = await untilStatus(executionId, ['succeeded', 'failed']);
    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ slow: { onTime: true } });
    expect(done.tasks.map((task: { status: string }) => task.status)).toEqual(['timed_out', 'succeeded']);
  }, 60_000);

  it('(f) a task that waits holds no attempt lease and no worker slot', async () => {
    // One attempt at a time: a waiting task that held a worker slot would stop everything else.
    await startWorker(1);
    // A noop first, so that an attempt runs and suspends (a lone task node would need no attempt at all).
    await publish('long-wait', {
      nodes: [
        { id: 'receive', type: 'noop' },
        { id: 'approve-invoice', type: 'task', config: { queue: 'humans' } },
      ],
      edges: [{ from: 'receive', to: 'approve-invoice' }],
    });
    await publish('quick', { nodes: [{ id: 'only', type: 'noop' }] });
    const waitingId = await startExecution('long-wait');
    const waiting = await untilStatus(waitingId, ['waiting']);
    expect(waiting.attempts.map((a: { status: string }) => a.status)).toEqual(['suspended']);
    expect(waiting.tasks.map((task: { status: string }) => task.status)).toEqual(['scheduled']);

    // The worker runs one attempt at a time: ten other executions go through it while the task waits.
    const others = await Promise.all(Array.from({ length: 10 }, () => startExecution('quick')));
    for (const id of others) expect((await untilStatus(id, ['succeeded', 'failed'])).status).toBe('succeeded');

    await t.waitForProjections();
    const stillWaiting = await view(waitingId);
    expect(stillWaiting.status).toBe('waiting');
    const events = await history(waitingId);
    const suspendedAt = events.findIndex((e) => e.type === 'AttemptSuspended');
    expect(suspendedAt).toBeGreaterThan(0);
    // Nothing claimed, heartbeated or scheduled since: no process holds it.
    expect(events.slice(suspendedAt + 1).map((e) => e.type)).toEqual([]);
    expect(events.filter((e) => e.type === 'AttemptClaimed')).toHaveLength(1);
    // The watchdog keeps no lease or queue deadline for it, only the execution's own.
    const { rows } = await t.readModelSql.query<{ kind: string }>('select kind from watchdog_deadlines where execution_id = $1', [
      waitingId,
    ]);
    expect(rows.map((r) => r.kind)).toEqual(['execution']);

    const task = await poll('humans', 'person-1', 5_000);
    expect(task.status).toBe(200);
    expect((await complete(task.body, 'person-1', { approved: true })).status).toBe(200);
    expect((await untilStatus(waitingId, ['succeeded', 'failed'])).status).toBe('succeeded');
  }, 60_000);

  it('(e) the control plane restarts while tasks wait and pollers poll: nothing lost, nothing run twice', async () => {
    await startWorker(8);
    const nodes = ['left', 'right'].map((id) => ({ id, type: 'task', config: { queue: 'restart', heartbeatTimeoutMs: 60_000 } }));
    await publish('restart', { nodes: [{ id: 'root', type: 'noop' }, ...nodes], edges: nodes.map((n) => ({ from: 'root', to: n.id })) });
    const executions = await Promise.all(Array.from({ length: 20 }, () => startExecution('restart')));

    // Plain HTTP pollers that follow the control plane to its new address and ride out its absence.
    let base = t.url;
    const runs = new Map<string, number>();
    let completed = 0;
    let stop = false;
    const poller = async (workerId: string) => {
      while (!stop) {
        try {
          const res = await client(base).post<Polled>('/v1/workspaces/ws-a/task-queues/restart/poll', {
            token: TOKENS.taskWorkerA,
            body: { workerId, waitMs: 500 },
          });
          if (res.status !== 200) continue;
          const key = `${res.body.executionId}:${res.body.nodeId}`;
          runs.set(key, (runs.get(key) ?? 0) + 1);
          // A completion whose answer was lost is sent again: a replay answers the same.
          for (;;) {
            try {
              const done = await client(base).post(`/v1/tasks/${res.body.taskId}/complete`, {
                token: TOKENS.taskWorkerA,
                body: { workerId, fencingToken: res.body.fencingToken, outcome: 'succeeded', output: { key } },
              });
              if (done.status === 200) break;
              if (done.status < 500) throw new Error(`completion refused: ${done.status} ${JSON.stringify(done.body)}`);
            } catch (error) {
              if (error instanceof Error && error.message.startsWith('completion refused')) throw error;
            }
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          completed++;
        } catch (error) {
          if (error instanceof Error && error.message.startsWith('completion refused')) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100)); // the control plane is away
        }
      }
    };
    const pollers = [poller('poller-1'), poller('poller-2')];
    try {
      await eventually(() => completed >= 10, { what: 'some completions before the restart', timeoutMs: 60_000 });
      await worker?.stop();
      worker = undefined;
      const databaseUrl = t.databaseUrl!;
      await t.close();
      t = await startTestApp('postgres', {}, { bus, databaseUrl });
      api = client(t.url);
      base = t.url;
      await startWorker(8);
      await eventually(() => completed >= 40, { what: () => `every task completed (${completed} so far)`, timeoutMs: 90_000 });
      for (const executionId of executions)
        expect((await untilStatus(executionId, ['succeeded', 'failed'], 60_000)).status).toBe('succeeded');
    } finally {
      stop = true;
      await Promise.all(pollers);
    }

    expect(runs.size).toBe(40);
    expect([...runs.entries()].filter(([, count]) => count !== 1)).toEqual([]);
    for (const executionId of executions) {
      const events = await history(executionId);
      expect(events.filter((e) => e.type === 'TaskScheduled')).toHaveLength(2);
      expect(events.filter((e) => e.type === 'TaskSucceeded')).toHaveLength(2);
    }
  }, 180_000);
});
