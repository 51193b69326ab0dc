import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import { PostgresEventStore } from '../../src/event-store/postgres/postgres-event-store.js';
import { executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import { PgSqlClient } from '../../src/postgres/pg-sql-client.js';
import { EffectSink } from '../chaos/effect-sink.js';
import { APP_READY, assertBuilt, spawnAppProcess, WORKER_READY, writeTestTokensFile, type AppProcess } from '../support/app-process.js';
import { eventually, sleep } from '../support/eventually.js';
import { HoldingSink } from '../support/holding-sink.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { createTestDatabase, freePort } from '../support/postgres-server.js';
import { TOKENS } from '../support/test-app.js';

/**
 * Fault test (a) of control flow and time: every role in a process of its own on real Postgres
 * and Kafka. Executions wait in a durable `delay`, in a `wait_signal`, in a delay before a
 * `wait_signal` whose signal came early, and on a child execution that waits in a delay of its
 * own, while a map of 1,000 `http` items is midway (some items recorded, 50 held open at the
 * sink). Then every Flostra process is SIGKILLed at once, stays down until the delays fell due,
 * and starts again. Each timer fires once (late, and recorded so), the `http` node after the
 * delay acts once, a signal sent after the restart is taken once, the parent has one child, the
 * map finishes each item once and calls no recorded item again, and each execution succeeds once.
 * Everything is checked on the recorded events.
 *
 * Of its 80 s, 30 go to the restart: the killed worker and ingestor stay members of their
 * consumer groups until their Kafka session times out (30 s), and their successors wait for that.
 */
const ROLES = ['api', 'dispatcher', 'ingestor', 'projector', 'watchdog', 'timer', 'worker'] as const;
type Role = (typeof ROLES)[number];
const DELAY_MS = 6_000;
const DELAYED = 3;
const SIGNALLED = 2;
const MAP_ITEMS = 1_000;
/** Map item requests the sink answers at once; it holds every later one until released. */
const ANSWERED_FIRST = 400;

type Event = { type: string; data: Record<string, unknown> };

describe('every process SIGKILLed during delays, signal waits, a child run and a map (real Postgres and Kafka)', () => {
  const sink = new EffectSink();
  const itemSink = new HoldingSink(ANSWERED_FIRST);
  const processes = new Map<Role, AppProcess>();
  const dir = mkdtempSync(join(tmpdir(), 'flostra-timer-kill-'));
  let sql: PgSqlClient;
  let store: PostgresEventStore;
  let databaseUrl: string;
  let apiUrl: string;
  let tokensFile: string;
  let api: ApiClient;

  beforeAll(async () => {
    assertBuilt();
    await sink.start();
    await itemSink.start();
    databaseUrl = await createTestDatabase('timer_kill');
    apiUrl = `http://127.0.0.1:${await freePort()}`;
    tokensFile = writeTestTokensFile();
    api = client(apiUrl);
    sql = new PgSqlClient({ connectionString: databaseUrl, max: 2 });
    store = await PostgresEventStore.open(sql);
  });
  afterAll(async () => {
    // Stopped cleanly, so that they leave their consumer groups: the suites after this one share
    // the broker and the groups, and would wait out the session of a killed member.
    await Promise.all(
      [...processes.values()].map(async (child) => {
        const stuck = setTimeout(() => void child.signal('SIGKILL'), 15_000);
        await child.signal('SIGTERM');
        clearTimeout(stuck);
      }),
    );
    await store?.close();
    await sql?.close();
    await sink.stop();
    await itemSink.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function startRole(role: Role): Promise<void> {
    const env: Record<string, string> = {
      FLOSTRA_ROLES: role,
      KAFKA_BROKERS: testKafkaBrokers().join(','),
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      FLOSTRA_DATA_DIR: join(dir, role),
    };
    if (role === 'worker') {
      Object.assign(env, { FLOSTRA_API_URL: apiUrl, FLOSTRA_WORKER_TOKEN: TOKENS.worker, FLOSTRA_EGRESS_ALLOW: '127.0.0.1/32' });
    } else {
      // The api on a fixed port, so that the worker (and this test) find it again after the restart.
      Object.assign(env, {
        EVENT_STORE_URL: databaseUrl,
        FLOSTRA_TOKENS_FILE: tokensFile,
        PORT: role === 'api' ? new URL(apiUrl).port : '0',
      });
    }
    processes.set(role, await spawnAppProcess(env, role === 'worker' ? WORKER_READY : APP_READY, 90_000));
  }
  /** The api first, then the roles that create the topics and consume them, then the worker. */
  async function startAll(): Promise<void> {
    await startRole('api');
    await Promise.all(ROLES.filter((role) => role !== 'api' && role !== 'worker').map(startRole));
    await startRole('worker');
  }

  const recorded = async (executionId: string): Promise<RecordedEvent[]> => store.readStream(executionStreamId(executionId));
  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
  const status = async (executionId: string) =>
    (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body.status as string;
  const view = async (executionId: string) => (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
  const count = (events: readonly { type: string }[], type: string) => events.filter((e) => e.type === type).length;
  /** Item indexes of every MapItemsCompleted fact, in the order recorded (repeats kept). */
  const completedItems = (events: readonly { type: string; data: unknown }[]): number[] =>
    events
      .filter((e) => e.type === 'MapItemsCompleted')
      .flatMap((e) => ((e.data as { items: { index: number }[] }).items ?? []).map((i) => i.index));
  const signal = (executionId: string, key: string) =>
    api.post(`/v1/executions/${executionId}/signals/go`, {
      token: TOKENS.operatorA,
      body: { payload: { key } },
      headers: { 'idempotency-key': key },
    });

  async function publishAndStart(name: string, graph: object, times: number): Promise<string[]> {
    const put = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    expect(put.status).toBe(201);
    return Promise.all(
      Array.from({ length: times }, async () => {
        const res = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: {} });
        expect(res.status).toBe(201);
        return res.body.executionId as string;
      }),
    );
  }

  it('fires each delay once, late; takes each signal once; finishes each map item and child once; each execution succeeds once', async () => {
    await startAll();
    // First the map, until it is midway: the first items answered and recorded, the next held.
    const [mapped] = await publishAndStart(
      'kill-map',
      {
        nodes: [
          {
            id: 'each',
            type: 'map',
            config: {
              items: `[1..${MAP_ITEMS}]`,
              concurrency: 50,
              node: { type: 'http', config: { method: 'POST', url: itemSink.url, body: {} } },
            },
          },
        ],
        retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
        timeouts: { leaseMs: 3_000 },
      },
      1,
    );
    await eventually(() => itemSink.heldCount === 50, { what: 'a full set of map items to be held', timeoutMs: 60_000 });
    await eventually(async () => completedItems(await history(mapped)).length >= ANSWERED_FIRST - 50, {
      what: 'the answered map items to be recorded',
      timeoutMs: 30_000,
    });
    const delayed = await publishAndStart(
      'kill-delay',
      {
        nodes: [
          { id: 'pause', type: 'delay', config: { ms: DELAY_MS } },
          { id: 'effect', type: 'http', config: { method: 'POST', url: `${sink.url}/effect`, body: { effect: 'after-delay' } } },
        ],
        edges: [{ from: 'pause', to: 'effect' }],
      },
      DELAYED,
    );
    const signalled = await publishAndStart(
      'kill-signal',
      {
        nodes: [
          { id: 'gate', type: 'wait_signal', config: { name: 'go' } },
          { id: 'after', type: 'transform', config: { expression: 'nodes.gate' } },
        ],
        edges: [{ from: 'gate', to: 'after' }],
      },
      SIGNALLED,
    );
    // The signal comes while the execution still waits on its delay, before `gate` is reached.
    const [early] = await publishAndStart(
      'kill-early-signal',
      {
        nodes: [
          { id: 'pause', type: 'delay', config: { ms: DELAY_MS } },
          { id: 'gate', type: 'wait_signal', config: { name: 'go' } },
          { id: 'after', type: 'transform', config: { expression: 'nodes.gate' } },
        ],
        edges: [
          { from: 'pause', to: 'gate' },
          { from: 'gate', to: 'after' },
        ],
      },
      1,
    );
    // A parent whose child waits in a delay of its own.
    const childGraph = { nodes: [{ id: 'pause', type: 'delay', config: { ms: DELAY_MS } }] };
    expect((await api.put('/v1/workspaces/ws-a/workflows/kill-child', { token: TOKENS.adminA, body: childGraph })).status).toBe(201);
    const [parent] = await publishAndStart(
      'kill-parent',
      {
        nodes: [
          { id: 'run', type: 'subworkflow', config: { workflow: 'kill-child' } },
          { id: 'after', type: 'transform', config: { expression: '{ "child": true }' } },
        ],
        edges: [{ from: 'run', to: 'after' }],
      },
      1,
    );
    const child = await eventually(async () => ((await view(parent)).children?.[0]?.executionId as string | undefined) ?? false, {
      what: 'the child to start',
      timeoutMs: 30_000,
    });
    const all = [...delayed, ...signalled, early, parent, child];
    for (const id of all) await eventually(async () => (await status(id)) === 'waiting', { what: `${id} to wait`, timeoutMs: 30_000 });
    const earlySent = await signal(early, `early-${early}`);
    expect(earlySent.status).toBe(202);

    // Every process at once.
    await Promise.all([...processes.values()].map((child) => child.signal('SIGKILL')));
    processes.clear();

    // What the log held at the kill: every delay scheduled and none fired; the signals waited for
    // (the early one kept, not taken).
    const dueAt: number[] = [];
    for (const id of [...delayed, early, child]) {
      const events = await recorded(id);
      expect(count(events, 'TimerScheduled')).toBe(1);
      expect(count(events, 'TimerFired')).toBe(0);
      dueAt.push(Date.parse((events.find((e) => e.type === 'TimerScheduled')!.data as { dueAt: string }).dueAt));
    }
    for (const id of signalled) expect(count(await recorded(id), 'SignalAwaited')).toBe(1);
    const earlyAtKill = await recorded(early);
    expect([count(earlyAtKill, 'SignalReceived'), count(earlyAtKill, 'SignalDelivered')]).toEqual([1, 0]);
    expect(count(await recorded(parent), 'ChildExecutionStarted')).toBe(1);
    const itemsAtKill = new Set(completedItems(await recorded(mapped)));
    expect(itemsAtKill.size).toBeGreaterThanOrEqual(ANSWERED_FIRST - 50);
    expect(itemsAtKill.size).toBeLessThan(MAP_ITEMS);
    itemSink.release();

    // Down until every delay fell due, then everything starts again.
    await sleep(Math.max(0, Math.max(...dueAt) - Date.now()) + 250);
    await startAll();

    for (const id of signalled) expect((await signal(id, `late-${id}`)).status).toBe(202);
    // A client that did not see its answer before the crash sends the early signal again: same signal.
    const earlyAgain = await signal(early, `early-${early}`);
    expect(earlyAgain.status).toBe(202);
    expect(earlyAgain.body.signalId).toBe(earlySent.body.signalId);

    for (const id of [...all, mapped]) {
      await eventually(async () => (await status(id)) === 'succeeded', { what: `${id} to succeed`, timeoutMs: 90_000 });
    }

    for (const id of [...delayed, early, child]) {
      const events = await history(id);
      const fired = events.filter((e) => e.type === 'TimerFired');
      expect(fired).toHaveLength(1);
      expect(fired[0].data['lateByMs']).toBeGreaterThan(0);
      expect(count(events, 'ExecutionSucceeded')).toBe(1);
    }
    // The effect after each delay reached the sink once, under its own key.
    for (const id of delayed) expect(sink.deliveries.get(`${id}:effect`)).toBe(1);
    expect([sink.deliveries.size, sink.unkeyed]).toEqual([DELAYED, 0]);

    for (const id of [...signalled, early]) {
      const events = await history(id);
      expect(count(events, 'SignalReceived')).toBe(1);
      expect(count(events, 'SignalDelivered')).toBe(1);
      expect(count(events, 'ExecutionSucceeded')).toBe(1);
      const key = id === early ? `early-${id}` : `late-${id}`;
      expect(events.find((e) => e.type === 'ExecutionSucceeded')!.data['output']).toEqual({ after: { key } });
    }

    // One child for the parent's node, started once, ended once.
    const parentEvents = await history(parent);
    expect(['ChildExecutionStarted', 'ChildExecutionEnded', 'ExecutionSucceeded'].map((type) => count(parentEvents, type))).toEqual([
      1, 1, 1,
    ]);
    expect((await view(parent)).children.map((c: { executionId: string }) => c.executionId)).toEqual([child]);
    expect(count(await history(child), 'ExecutionStarted')).toBe(1);

    // The map: the attempt killed midway timed out, the next ran only the items not recorded;
    // each item finished once, no recorded item reached the sink again, and the output keeps item order.
    const mapView = await view(mapped);
    expect(mapView.attempts.map((a: { status: string }) => a.status)).toEqual(['timed_out', 'succeeded']);
    const mapEvents = await history(mapped);
    const items = completedItems(mapEvents);
    expect([items.length, new Set(items).size]).toEqual([MAP_ITEMS, MAP_ITEMS]);
    // The history holds the map's output whole (the view may show a large one as `$omitted`).
    const output = mapEvents.filter((e) => e.type === 'NodeSucceeded' && e.data['nodeId'] === 'each').at(-1)?.data['output'] as {
      body: { key: string };
    }[];
    expect(output.map((item) => item.body.key)).toEqual(Array.from({ length: MAP_ITEMS }, (_, i) => `${mapped}:each:${i}`));
    expect(itemSink.hits.size).toBe(MAP_ITEMS);
    for (const index of itemsAtKill) expect(itemSink.hits.get(`${mapped}:each:${index}`)).toBe(1);
  }, 240_000);
});
