import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { TOPICS } from '../../src/core/bus.port.js';
import { createLogger } from '../../src/core/logger.js';
import { PgSqlClient } from '../../src/postgres/pg-sql-client.js';
import { SqlLeases } from '../../src/postgres/sql-leases.js';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually } from '../support/eventually.js';
import { type AppProcess, spawnFlostra, writeTestTokensFile } from '../support/app-process.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { createTestDatabase } from '../support/postgres-server.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** Failover and shutdown of whole processes on real Postgres and Kafka. */
describe('single-writer roles in several processes (real Kafka, real Postgres)', () => {
  const barrier = new BarrierServer();
  const processes: AppProcess[] = [];
  const closers: (() => Promise<void>)[] = [];
  let api: ApiClient;

  beforeAll(() => barrier.start());
  afterAll(() => barrier.stop());
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.signal('SIGKILL')));
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function openLeases(url: string): Promise<SqlLeases> {
    const sql = new PgSqlClient({ connectionString: url, max: 2 });
    closers.push(() => sql.close());
    return SqlLeases.open(sql);
  }

  /** Role → `<pid> epoch <n>` of every lease held now. */
  async function holders(leases: SqlLeases): Promise<Record<string, string>> {
    const held = (await leases.list()).filter((l) => !l.expired);
    return Object.fromEntries(held.map((l) => [l.role, `${l.holder.split('/')[1]} epoch ${l.epoch}`]));
  }

  async function start(name: string, graph: object, count: number): Promise<string[]> {
    const put = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    expect([200, 201]).toContain(put.status);
    return Promise.all(
      Array.from({ length: count }, async () => {
        const started = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: {} });
        expect(started.status).toBe(201);
        return started.body.executionId as string;
      }),
    );
  }

  async function allSucceeded(ids: readonly string[]): Promise<{ status: string; attempts: { status: string }[] }[]> {
    return eventually(
      async () => {
        const views = await Promise.all(ids.map(async (id) => (await api.get(`/v1/executions/${id}`, { token: TOKENS.viewerA })).body));
        return views.every((v) => v.status === 'succeeded') && views;
      },
      { what: () => 'every execution to succeed', timeoutMs: 90_000 },
    );
  }

  it('SIGKILL of the active dispatcher+watchdog under load: the standby takes over and every execution completes', async () => {
    const brokers = testKafkaBrokers();
    const bus = new KafkaBus({ brokers, clientId: 'failover-test', logger: createLogger({ level: 'silent' }) });
    closers.push(() => bus.close());
    // The dispatcher (in the children) creates the dispatch topic; the in-process worker subscribes first.
    await bus.ensureTopics([
      { topic: TOPICS.dispatch, partitions: 12 },
      { topic: TOPICS.results, partitions: 12 },
    ]);
    const t: TestApp = await startTestApp(
      'postgres',
      { FLOSTRA_ROLES: 'api,ingestor,projector' },
      { bus, worker: { concurrency: 8, egressAllow: ['127.0.0.1/32'] } },
    );
    closers.push(() => t.close());
    api = client(t.url);
    const env = {
      EVENT_STORE_URL: t.databaseUrl!,
      DATABASE_URL: t.databaseUrl!,
      KAFKA_BROKERS: brokers.join(','),
      FLOSTRA_ROLES: 'dispatcher,watchdog',
      FLOSTRA_TOKENS_FILE: writeTestTokensFile(),
    };
    const leases = await openLeases(t.databaseUrl!);
    const [a, b] = [spawnFlostra(env), spawnFlostra(env)];
    processes.push(a, b);
    const active = await eventually(
      async () => {
        const dispatcher = (await holders(leases))['dispatcher'];
        return [a, b].find((p) => dispatcher === `${p.pid} epoch 1`) ?? false;
      },
      { what: 'one process to hold the dispatcher lease', timeoutMs: 60_000 },
    );
    const standby = active === a ? b : a;
    await standby.waitFor('Flostra is listening on', 60_000);

    const graph = { nodes: [{ id: 'call', type: 'http', config: { method: 'GET', url: `${barrier.url}/echo/failover` } }], edges: [] };
    const before = await start('failover', graph, 10);
    const killedAt = Date.now();
    await active.signal('SIGKILL');
    const during = await start('failover', graph, 10);
    await eventually(
      async () => {
        // The two leases are raced for apart: the standby may have held the watchdog's from the start.
        const held = await holders(leases);
        expect(held['dispatcher']).toBe(`${standby.pid} epoch 2`);
        expect(held['watchdog']).toMatch(new RegExp(`^${standby.pid} epoch [12]$`));
      },
      {
        what: 'the standby to take both leases over',
        timeoutMs: 30_000,
        intervalMs: 50,
      },
    );
    const takeoverMs = Date.now() - killedAt;
    process.stdout.write(`dispatcher+watchdog takeover after SIGKILL of the active process: ${takeoverMs} ms (TTL 3000 ms, poll 500 ms)\n`);

    const views = await allSucceeded([...before, ...during]);
    // Nothing dispatched and lost: every execution ran on its first attempt (a lost dispatch would
    // only have been retried after its queue deadline, by a second attempt).
    expect(views.map((v) => v.attempts.map((x) => x.status))).toEqual(views.map(() => ['succeeded']));
  }, 180_000);

  it('SIGTERM of a full process mid-load: exit 0, attempts handed back, leases released; a restart completes everything', async () => {
    const brokers = testKafkaBrokers();
    const url = await createTestDatabase('shutdown');
    const leases = await openLeases(url);
    const env = {
      EVENT_STORE_URL: url,
      DATABASE_URL: url,
      KAFKA_BROKERS: brokers.join(','),
      FLOSTRA_TOKENS_FILE: writeTestTokensFile(),
      FLOSTRA_WORKER_TOKEN: TOKENS.worker,
      FLOSTRA_EGRESS_ALLOW: '127.0.0.1/32',
      FLOSTRA_SHUTDOWN_GRACE_MS: '1000',
    };
    const first = spawnFlostra(env);
    processes.push(first);
    await first.waitFor('Flostra is listening on', 60_000);
    api = client(/Flostra is listening on (\S+)/.exec(first.output())![1]);
    await eventually(async () => Object.keys(await holders(leases)).includes('dispatcher'), 'the dispatcher lease to be taken');

    const ids = await start(
      'held',
      {
        nodes: [{ id: 'wait', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/shutdown` } }],
        edges: [],
        timeouts: { leaseMs: 3_000 },
        retry: { maxAttempts: 3, initialIntervalMs: 0, maxIntervalMs: 0 },
      },
      4,
    );
    await eventually(() => barrier.heldCount('shutdown') > 0, { what: 'an attempt to be running', timeoutMs: 60_000 });
    await first.signal('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('handing running attempts back');
    expect(await holders(leases)).toEqual({});

    barrier.release('shutdown');
    const second = spawnFlostra(env);
    processes.push(second);
    await second.waitFor('Flostra is listening on', 60_000);
    api = client(/Flostra is listening on (\S+)/.exec(second.output())![1]);
    await allSucceeded(ids);
  }, 180_000);
});
