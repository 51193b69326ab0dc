import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import { createWorker } from '../../src/worker/runtime/create-worker.js';
import type { WorkerService } from '../../src/worker/runtime/worker.service.js';
import { assertBuilt, spawnWorkerProcess, type AppProcess } from '../support/app-process.js';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { startKafkaBroker, testKafkaBrokers, type KafkaBroker } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** Faults of issue 3 on the full stack: real Postgres, real Kafka, a worker in another process. */
const quiet = createLogger({ level: 'silent' });

type Event = { type: string; data: Record<string, unknown> };

describe('the full stack under injected faults (real Kafka, real Postgres)', () => {
  const barrier = new BarrierServer();
  const buses: KafkaBus[] = [];
  const workers: WorkerService[] = [];
  const children: AppProcess[] = [];
  let t: TestApp | undefined;
  let api: ApiClient;

  beforeAll(async () => {
    assertBuilt();
    await barrier.start();
  });
  afterAll(() => barrier.stop());
  afterEach(async () => {
    for (const child of children.splice(0)) await child.signal('SIGKILL');
    for (const worker of workers.splice(0)) await worker.stop();
    await t?.close();
    t = undefined;
    for (const bus of buses.splice(0)) await bus.close();
  });

  function kafkaBus(brokers: string[]): KafkaBus {
    const bus = new KafkaBus({ brokers, clientId: 'fault-test', logger: quiet });
    buses.push(bus);
    return bus;
  }

  async function publishAndStart(name: string, graph: object) {
    const put = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    expect([200, 201]).toContain(put.status);
    const started = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: {} });
    expect(started.status).toBe(201);
    return started.body.executionId as string;
  }

  const view = async (executionId: string) => (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;

  /** `npm run worker`: a worker process of its own, talking to the app over HTTP and Kafka. */
  async function spawnWorker(apiUrl: string, brokers: string[]): Promise<AppProcess> {
    const child = await spawnWorkerProcess(apiUrl, brokers, TOKENS.worker);
    children.push(child);
    return child;
  }

  it('(b) a worker killed mid-run: the lease expires, a retry attempt runs, and nodes finished before are not run again', async () => {
    const brokers = testKafkaBrokers();
    t = await startTestApp('postgres', { FLOSTRA_ROLES: 'api,dispatcher,ingestor,projector,watchdog' }, { bus: kafkaBus(brokers) });
    api = client(t.url);
    const first = await spawnWorker(t.url, brokers);
    const executionId = await publishAndStart('killed-worker', {
      nodes: [
        { id: 'n1', type: 'http', config: { method: 'GET', url: `${barrier.url}/echo/killed-n1` } },
        { id: 'n2', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/killed-n2` } },
      ],
      edges: [{ from: 'n1', to: 'n2' }],
      retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
      timeouts: { leaseMs: 3_000 },
    });
    await eventually(() => barrier.heldCount('killed-n2') === 1, { what: 'n2 to be held at the barrier', timeoutMs: 60_000 });
    await eventually(
      async () => (await history(executionId)).some((e) => e.type === 'NodeSucceeded' && e.data['nodeId'] === 'n1'),
      'n1 to be recorded',
    );
    await first.signal('SIGKILL');
    barrier.release('killed-n2');

    // A replacement worker that joins later (a group of its own, so it need not wait out the dead
    // member's session): it sees attempt 1 too, but only the claim of the retry attempt is its.
    const second = createWorker({
      bus: kafkaBus(brokers),
      apiUrl: t.url,
      token: TOKENS.worker,
      logger: quiet,
      concurrency: 4,
      egressAllow: ['127.0.0.1/32'],
      groupId: 'replacement-workers',
    });
    workers.push(second);
    await second.start();

    const done = await eventually(
      async () => {
        const v = await view(executionId);
        return ['succeeded', 'failed', 'timed_out'].includes(v.status) ? v : false;
      },
      { what: 'the execution to finish', timeoutMs: 90_000 },
    );
    expect(done.status).toBe('succeeded');
    expect(done.attempts.map((a: { status: string }) => a.status)).toEqual(['timed_out', 'succeeded']);
    expect(barrier.hits.get('killed-n1')).toBe(1);
    const events = await history(executionId);
    expect(events.filter((e) => e.type === 'NodeSucceeded' && e.data['nodeId'] === 'n1')).toHaveLength(1);
  }, 180_000);

  describe('(f) the broker restarts mid-run', () => {
    let broker: KafkaBroker;
    beforeAll(async () => {
      broker = await startKafkaBroker({ reuseExisting: false });
    }, 120_000);
    afterAll(() => broker?.stop());

    it('finishes every execution', async () => {
      const bus = kafkaBus(broker.brokers);
      t = await startTestApp('postgres', {}, { bus, worker: { concurrency: 4 } });
      api = client(t.url);
      const graph = {
        nodes: [
          { id: 'a', type: 'noop' },
          { id: 'wait', type: 'delay', config: { ms: 1_500 } },
          { id: 'z', type: 'noop' },
        ],
        edges: [
          { from: 'a', to: 'wait' },
          { from: 'wait', to: 'z' },
        ],
      };
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push(await publishAndStart('through-restart', graph));
      await eventually(async () => (await history(ids[0])).some((e) => e.type === 'AttemptClaimed'), {
        what: 'the first attempt to be claimed',
        timeoutMs: 60_000,
      });
      await broker.restart({ hard: true });
      for (const id of ids) {
        const done = await eventually(
          async () => {
            const v = await view(id);
            return ['succeeded', 'failed', 'timed_out', 'cancelled'].includes(v.status) ? v : false;
          },
          { what: `execution ${id} to finish`, timeoutMs: 120_000 },
        );
        if (done.status !== 'succeeded')
          console.log(
            JSON.stringify(
              (await history(id)).map((e) => [e.type, e.data]),
              null,
              0,
            ),
          );
        expect({ id, status: done.status }).toEqual({ id, status: 'succeeded' });
      }
    }, 300_000);
  });
});
