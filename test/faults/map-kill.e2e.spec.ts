import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import { createWorker } from '../../src/worker/runtime/create-worker.js';
import type { WorkerService } from '../../src/worker/runtime/worker.service.js';
import { assertBuilt, spawnWorkerProcess, type AppProcess } from '../support/app-process.js';
import { eventually } from '../support/eventually.js';
import { HoldingSink } from '../support/holding-sink.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const quiet = createLogger({ level: 'silent' });
const ITEMS = 1_000;
/** Requests the sink answers at once; it holds every later one until released. */
const ANSWERED_FIRST = 400;

type Event = { type: string; data: Record<string, unknown> };

/** The map node's output as its NodeSucceeded recorded it. */
const mapOutput = (events: Event[]) =>
  events.filter((e) => e.type === 'NodeSucceeded' && e.data['nodeId'] === 'each').at(-1)?.data['output'] as { body: { key: string } }[];

describe('a map of 1,000 http items whose worker is killed midway (real Kafka, real Postgres)', () => {
  const sink = new HoldingSink(ANSWERED_FIRST);
  const buses: KafkaBus[] = [];
  let worker: WorkerService | undefined;
  let child: AppProcess | undefined;
  let t: TestApp | undefined;
  let api: ApiClient;

  beforeAll(async () => {
    assertBuilt();
    await sink.start();
  });
  afterAll(() => sink.stop());
  afterEach(async () => {
    await child?.signal('SIGKILL');
    await worker?.stop();
    await t?.close();
    for (const bus of buses.splice(0)) await bus.close();
  });

  const kafkaBus = (brokers: string[]) => {
    const bus = new KafkaBus({ brokers, clientId: 'map-kill-test', logger: quiet });
    buses.push(bus);
    return bus;
  };
  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
  /** Indexes of every MapItemsCompleted fact, in the order recorded (repeats kept). */
  const completedIndexes = (events: Event[]): number[] =>
    events.filter((e) => e.type === 'MapItemsCompleted').flatMap((e) => (e.data['items'] as { index: number }[]).map((i) => i.index));

  it('finishes every item exactly once: the retry attempt runs only the items not recorded before the kill', async () => {
    const brokers = testKafkaBrokers();
    t = await startTestApp('postgres', { FLOSTRA_ROLES: 'api,dispatcher,ingestor,projector,watchdog' }, { bus: kafkaBus(brokers) });
    api = client(t.url);
    child = await spawnWorkerProcess(t.url, brokers, TOKENS.worker);
    const put = await api.put('/v1/workspaces/ws-a/workflows/map-kill', {
      token: TOKENS.adminA,
      body: {
        nodes: [
          {
            id: 'each',
            type: 'map',
            config: {
              items: `[1..${ITEMS}]`,
              concurrency: 50,
              node: { type: 'http', config: { method: 'POST', url: sink.url, body: {} } },
            },
          },
        ],
        retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
        timeouts: { leaseMs: 6_000 },
      },
    });
    expect(put.status).toBe(201);
    const started = await api.post('/v1/workspaces/ws-a/workflows/map-kill/executions', { token: TOKENS.operatorA, body: {} });
    expect(started.status).toBe(201);
    const executionId = started.body.executionId as string;

    // Midway: the first items are answered and recorded, the next ones are held at the sink.
    await eventually(() => sink.heldCount === 50, { what: 'a full set of items to be held', timeoutMs: 60_000 });
    const beforeKill = await eventually(
      async () => {
        const done = completedIndexes(await history(executionId));
        return done.length >= ANSWERED_FIRST - 50 ? done : false;
      },
      { what: 'the answered items to be recorded', timeoutMs: 30_000 },
    );
    await child.signal('SIGKILL');
    const recordedBeforeKill = new Set(completedIndexes(await history(executionId)));
    expect(recordedBeforeKill.size).toBeGreaterThanOrEqual(beforeKill.length);
    expect(recordedBeforeKill.size).toBeLessThan(ITEMS);
    sink.release();

    // A replacement worker in a group of its own (it need not wait out the dead member's session).
    worker = createWorker({
      bus: kafkaBus(brokers),
      apiUrl: t.url,
      token: TOKENS.worker,
      logger: quiet,
      concurrency: 4,
      egressAllow: ['127.0.0.1/32'],
      groupId: 'map-kill-replacement',
    });
    await worker.start();

    const done = await eventually(
      async () => {
        const view = (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
        return ['succeeded', 'failed', 'timed_out'].includes(view.status) ? view : false;
      },
      { what: 'the execution to finish', timeoutMs: 90_000 },
    );
    expect(done.status).toBe('succeeded');
    expect(done.attempts.map((a: { status: string }) => a.status)).toEqual(['timed_out', 'succeeded']);

    // Recorded: every item finished exactly once, across both attempts.
    const events = await history(executionId);
    const completed = completedIndexes(events);
    expect(completed).toHaveLength(ITEMS);
    expect(new Set(completed).size).toBe(ITEMS);
    // The output keeps item order; each item called with its own idempotency key. The view shows an
    // output this large as `$omitted`; the history holds it whole.
    expect(done.nodes.find((n: { nodeId: string }) => n.nodeId === 'each').output).toHaveProperty('$omitted');
    const output = mapOutput(events);
    expect(output.map((item) => item.body.key)).toEqual(Array.from({ length: ITEMS }, (_, i) => `${executionId}:each:${i}`));
    // Effects: every key reached the sink; the items recorded before the kill were never called again.
    expect(sink.hits.size).toBe(ITEMS);
    for (const index of recordedBeforeKill) expect(sink.hits.get(`${executionId}:each:${index}`)).toBe(1);
  }, 180_000);
});
