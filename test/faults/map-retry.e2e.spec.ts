import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import type { WorkerService } from '../../src/worker/runtime/worker.service.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, startWorkerInGroup, TOKENS, type TestApp } from '../support/test-app.js';

const quiet = createLogger({ level: 'silent' });
const ITEMS = 20;
/** The item indexes whose first call the sink answers 503 (retryable); every later call is 200. */
const FLAKY = [3, 7, 12, 19];

type Event = { type: string; data: Record<string, unknown> };

/**
 * A loopback sink for the map's http items: counts the calls of each item by its Idempotency-Key
 * (`<executionId>:<nodeId>:<index>`) and answers the first call of a FLAKY index 503.
 */
class FlakySink {
  readonly calls = new Map<string, number>();
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const key = String(req.headers['idempotency-key']);
      const calls = (this.calls.get(key) ?? 0) + 1;
      this.calls.set(key, calls);
      const index = Number(key.split(':').at(-1));
      const failing = FLAKY.includes(index) && calls === 1;
      req.resume();
      req.once('end', () => {
        res.writeHead(failing ? 503 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ index }));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/item`;
  }

  /** Calls of each item of the execution's node `nodeId`, in index order. */
  callsOf(executionId: string, nodeId: string): number[] {
    return Array.from({ length: ITEMS }, (_, index) => this.calls.get(`${executionId}:${nodeId}:${index}`) ?? 0);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/**
 * Issue 19, fault test (e): a map whose http items fail retryably reruns only the failed items,
 * on the full stack (Postgres, Kafka, every role and a worker). Each place a retry can
 * come from: the inner node's retry policy (each item retried inside the map), the map node's own
 * (its next try runs the items not finished), and the workflow's (a later attempt runs only the
 * items no earlier attempt finished).
 */
describe('a map whose items fail retryably reruns only the failed items (real Kafka, real Postgres)', () => {
  const sink = new FlakySink();
  let bus: KafkaBus;
  let t: TestApp;
  let api: ApiClient;
  let worker: WorkerService | undefined;

  beforeAll(async () => {
    await sink.start();
    bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'map-retry', logger: quiet });
    t = await startTestApp('postgres', {}, { bus });
    api = client(t.url);
    // A consumer group of its own: the default one may still list a worker an earlier suite killed.
    worker = await startWorkerInGroup(bus, t.url, 'map-retry-workers');
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
    await bus?.close();
    await sink.stop();
  });

  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
  /** Item indexes of the facts of `type`, in the order recorded, by attempt. */
  const itemIndexes = (events: Event[], type: string, attemptId?: string): number[] =>
    events
      .filter((e) => e.type === type && (attemptId === undefined || e.data['attemptId'] === attemptId))
      .flatMap((e) => (e.data['items'] as { index: number }[]).map((i) => i.index));
  const expectedCalls = Array.from({ length: ITEMS }, (_, index) => (FLAKY.includes(index) ? 2 : 1));

  async function run(name: string, graph: object) {
    const put = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    expect(put.status).toBe(201);
    const started = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: {} });
    expect(started.status).toBe(201);
    const executionId = started.body.executionId as string;
    const view = await eventually(
      async () => {
        const v = (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
        return ['succeeded', 'failed', 'timed_out', 'cancelled'].includes(v.status) ? v : false;
      },
      { what: `${name} to finish`, timeoutMs: 60_000 },
    );
    expect(view.status).toBe('succeeded');
    // The output is the items' answers in item order.
    const output = view.nodes.find((n: { nodeId: string }) => n.nodeId === 'each').output as { status: number; body: { index: number } }[];
    expect(output.map((item) => [item.status, item.body.index])).toEqual(Array.from({ length: ITEMS }, (_, i) => [200, i]));
    return { executionId, view, events: await history(executionId) };
  }

  const mapOf = (node: object, concurrency: number) => ({
    id: 'each',
    type: 'map',
    config: { items: `[0..${ITEMS - 1}]`, concurrency, node },
  });
  /** The item node: a POST to the sink (its url is known once it listens). */
  const httpItem = (more: object = {}) => ({ type: 'http', config: { method: 'POST', url: sink.url, body: {} }, ...more });

  it('the inner node’s retry policy: each failed item is retried inside the map, the others are called once', async () => {
    const { executionId, view, events } = await run('map-item-retry', {
      nodes: [mapOf(httpItem({ retry: { maxAttempts: 2, initialIntervalMs: 0 } }), 5)],
    });
    expect(view.attempts.map((a: { status: string }) => a.status)).toEqual(['succeeded']);
    expect(sink.callsOf(executionId, 'each')).toEqual(expectedCalls);
    // No item failed past its retries; each finished once.
    expect(itemIndexes(events, 'MapItemsFailed')).toEqual([]);
    expect(itemIndexes(events, 'MapItemsCompleted').sort((a, b) => a - b)).toEqual(Array.from({ length: ITEMS }, (_, i) => i));
  });

  it('the map node’s own retry policy: its next try in the same attempt runs only the failed items', async () => {
    const { executionId, view, events } = await run('map-node-retry', {
      nodes: [{ ...mapOf(httpItem(), ITEMS), retry: { maxAttempts: 2, initialIntervalMs: 0 } }],
    });
    const [only] = view.attempts as { attemptId: string; status: string }[];
    expect(view.attempts).toHaveLength(1);
    expect(only.status).toBe('succeeded');
    expect(sink.callsOf(executionId, 'each')).toEqual(expectedCalls);
    expect(itemIndexes(events, 'MapItemsFailed').sort((a, b) => a - b)).toEqual(FLAKY);
    const completed = itemIndexes(events, 'MapItemsCompleted');
    expect([completed.length, new Set(completed).size]).toEqual([ITEMS, ITEMS]);
  });

  it('the workflow’s retry policy: the next attempt runs only the items the failed one did not finish', async () => {
    const { executionId, view, events } = await run('map-attempt-retry', {
      // Every item starts before the first failure stops new starts: the first attempt tries them all.
      nodes: [mapOf(httpItem(), ITEMS)],
      retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
    });
    const [first, second] = view.attempts as { attemptId: string; status: string }[];
    expect([first.status, second.status]).toEqual(['failed', 'succeeded']);
    expect(sink.callsOf(executionId, 'each')).toEqual(expectedCalls);
    // Recorded: the flaky items failed in the first attempt, and they alone ran in the second.
    expect(itemIndexes(events, 'MapItemsFailed', first.attemptId).sort((a, b) => a - b)).toEqual(FLAKY);
    expect(itemIndexes(events, 'MapItemsCompleted', second.attemptId).sort((a, b) => a - b)).toEqual(FLAKY);
    const started = events.filter((e) => e.type === 'MapItemsStarted' && e.data['attemptId'] === second.attemptId);
    expect(started.flatMap((e) => e.data['indexes'] as number[]).sort((a, b) => a - b)).toEqual(FLAKY);
    const completed = itemIndexes(events, 'MapItemsCompleted');
    expect([completed.length, new Set(completed).size]).toEqual([ITEMS, ITEMS]);
  });
});
