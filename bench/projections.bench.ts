import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { createApp } from '../src/app/create-app.js';
import { TokenRegistry } from '../src/auth/token-registry.js';
import type { TokenEntry } from '../src/auth/tokens-file.schema.js';
import { InProcessBus } from '../src/bus/in-process/in-process-bus.js';
import { loadConfig } from '../src/config/config.js';
import { systemClock } from '../src/core/clock.port.js';
import type { EventToAppend } from '../src/core/event-store.port.js';
import { randomIds } from '../src/core/ids.js';
import { createLogger } from '../src/core/logger.js';
import { PostgresEventStore } from '../src/event-store/postgres/postgres-event-store.js';
import { EXECUTION_SCHEMA_VERSION } from '../src/executions/domain/execution-event.parser.js';
import { PgSqlClient } from '../src/postgres/pg-sql-client.js';
import { liveCheckpoint, readCatalog, requestRebuild } from '../src/projector/projection-catalog.js';
import { ProjectionSignals } from '../src/projector/projection-signals.js';
import type { BatchInfo } from '../src/projector/projection-runner.js';
import { Projector } from '../src/projector/projector.js';
import { ensureCatalog } from '../src/projector/projector.schema.js';
import { PROJECTION_DEFINITIONS } from '../projections/projections.registry.js';
import { createTestDatabase, startPostgresServer } from '../test/support/postgres-server.js';

/**
 * The projector on real Postgres: (1) build and rebuild speed over a log of at least a million
 * execution events, appended in bulk straight through the store (this measures the projector,
 * not the API); (2) steady projection lag while executions are driven through the HTTP API.
 * Prints one JSON document on stdout; progress on stderr.
 */
const TARGET_EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const GENERATE_LIMIT_MS = Number(process.env.BENCH_GENERATE_MS ?? 300_000);
const BATCH_SIZE = Number(process.env.BENCH_BATCH ?? 5_000);
const LOAD_MS = Number(process.env.BENCH_LOAD_MS ?? 20_000);
const CLIENTS = 16;
const NODES = ['a', 'b', 'c', 'd', 'e'];
const logger = createLogger({ level: 'silent' });
const log = (message: string) => process.stderr.write(`bench: ${message}\n`);
const round = (value: number, digits = 0) => Math.round(value * 10 ** digits) / 10 ** digits;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

/** 20 events of one successful execution of a five-node chain, in two appends (like two commands' worth). */
function executionHistory(executionId: string, t: number): [EventToAppend[], EventToAppend[]] {
  const at = (ms: number) => new Date(t + ms).toISOString();
  const attemptId = randomUUID();
  const graph = {
    nodes: NODES.map((id) => ({ id, type: 'noop' })),
    edges: NODES.slice(1).map((to, i) => ({ from: NODES[i], to })),
    retry: { maxAttempts: 1, initialIntervalMs: 0, backoffCoefficient: 1, maxIntervalMs: 0, nonRetryable: [] },
    timeouts: { queueMs: 60_000, leaseMs: 30_000, executionMs: 3_600_000 },
  };
  const workspaceId = `ws-${executionId.charCodeAt(0) % 8}`;
  const e = (type: string, data: object): EventToAppend => ({
    id: randomUUID(),
    type,
    data,
    metadata: { schemaVersion: EXECUTION_SCHEMA_VERSION, workspaceId, executionId },
  });
  const node = (id: string, ms: number) => [
    e('NodeStarted', { attemptId, nodeId: id, at: at(ms) }),
    e('NodeSucceeded', { attemptId, nodeId: id, output: { rows: ms }, at: at(ms + 5) }),
  ];
  const extend = (ms: number) => e('LeaseExtended', { attemptId, leaseExpiresAt: at(ms + 30_000), extendedAt: at(ms) });
  const events = [
    e('ExecutionStarted', {
      executionId,
      workspaceId,
      workflow: { workflowId: randomUUID(), name: `flow-${executionId.charCodeAt(1) % 4}`, revision: 1, digest: 'sha256:bench', graph },
      input: { t },
      idempotency: null,
      startedBy: 'bench',
      startedAt: at(0),
    }),
    e('AttemptScheduled', {
      attemptId,
      attemptNumber: 1,
      reason: 'start',
      notBefore: at(0),
      queueDeadline: at(60_000),
      scheduledAt: at(0),
    }),
    e('AttemptClaimed', { attemptId, workerId: 'bench-worker', fencingToken: 1, leaseExpiresAt: at(30_010), claimedAt: at(10) }),
    ...node('a', 20),
    extend(30),
    ...node('b', 40),
    extend(50),
    e('NodeStarted', { attemptId, nodeId: 'c', at: at(60) }),
    e('NodeSucceeded', { attemptId, nodeId: 'c', output: { rows: 60 }, at: at(65) }),
    extend(70),
    ...node('d', 80),
    extend(90),
    ...node('e', 100),
    extend(110),
    e('AttemptSucceeded', { attemptId, output: { ok: true }, at: at(120) }),
    e('ExecutionSucceeded', { output: { ok: true }, at: at(120) }),
  ];
  return [events.slice(0, 10), events.slice(10)];
}

/** Appends histories group by group, first halves then second halves, so executions interleave in the log. */
async function generate(store: PostgresEventStore): Promise<{ events: number; appends: number; seconds: number }> {
  const started = performance.now();
  let events = 0;
  let appends = 0;
  while (events < TARGET_EVENTS && performance.now() - started < GENERATE_LIMIT_MS) {
    const group = Array.from({ length: 1_000 }, () => ({ id: randomUUID(), history: executionHistory(randomUUID(), Date.now()) }));
    for (const half of [0, 1] as const) {
      await pool(group, CLIENTS, async ({ id, history }) => {
        await store.appendToStream(`execution-${id}`, history[half], { expectedRevision: half === 0 ? 'no_stream' : 9 });
        events += history[half].length;
        appends++;
      });
    }
    if (appends % 20_000 === 0) log(`appended ${events} events`);
  }
  return { events, appends, seconds: round((performance.now() - started) / 1000, 1) };
}

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await sleep(100);
}

/** Projector speed: an initial build of every read model together, then a rebuild of each while the others stay live. */
async function benchBuilds(url: string) {
  const sql = new PgSqlClient({ connectionString: url, max: 20 });
  const store = await PostgresEventStore.open(sql);
  log(`generating ${TARGET_EVENTS} events`);
  const generated = await generate(store);
  const head = (await store.headPosition())!;
  await ensureCatalog(sql, PROJECTION_DEFINITIONS);
  const signals = new ProjectionSignals(sql);
  const switches = new Map<string, number>();
  const afterCommit = (info: BatchInfo) => void (info.switched && switches.set(info.name, performance.now()));
  const projector = new Projector({
    sql,
    store,
    definitions: PROJECTION_DEFINITIONS,
    signals,
    logger,
    options: { liveBatchSize: BATCH_SIZE, rebuildBatchSize: BATCH_SIZE, hooks: { afterCommit } },
  });
  log('initial build of every read model');
  let t0 = performance.now();
  projector.start();
  const initial: Record<string, number> = {};
  await Promise.all(
    PROJECTION_DEFINITIONS.map(async ({ name }) => {
      await waitFor(async () => ((await liveCheckpoint(sql, name)) ?? '') >= head);
      initial[name] = (performance.now() - t0) / 1000;
    }),
  );
  const rebuilds: Record<string, object> = {};
  for (const definition of PROJECTION_DEFINITIONS) {
    log(`rebuild of ${definition.name}`);
    t0 = performance.now();
    const { version } = await requestRebuild(sql, definition, randomUUID());
    projector.poke();
    await waitFor(async () => switches.has(definition.name));
    const seconds = (switches.get(definition.name)! - t0) / 1000;
    const events = (await readCatalog(sql)).get(definition.name)!.versions.find((v) => v.version === version)!.eventsSeen;
    rebuilds[definition.name] = { events, seconds: round(seconds, 1), eventsPerSec: round(events / seconds) };
  }
  await projector.stop();
  await signals.close();
  await store.close();
  await sql.close();
  const initialBuild = Object.fromEntries(
    Object.entries(initial).map(([name, s]) => [name, { seconds: round(s, 1), eventsPerSec: round(generated.events / s) }]),
  );
  return { generated, batchSize: BATCH_SIZE, initialBuildBothAtOnce: initialBuild, rebuildOneAtATimeWhileOtherLive: rebuilds };
}

/** Lag from a command's response to the moment its position is in the read model, while clients drive executions. */
async function benchLag(url: string) {
  const sql = new PgSqlClient({ connectionString: url, max: 20 });
  const store = await PostgresEventStore.open(sql);
  const tokens: (TokenEntry & { token: string })[] = [
    { token: 'bench-admin-token-0001', subject: 'bench', workspaces: { bench: 'admin' }, global: ['system-admin'] },
    { token: 'bench-worker-token-0001', subject: 'worker', workspaces: {}, global: ['worker'] },
  ];
  const config = loadConfig({ LOG_LEVEL: 'silent', FLOSTRA_ROLES: 'api,projector' });
  const app = await createApp({
    config,
    store,
    readModelSql: sql,
    bus: new InProcessBus(),
    clock: systemClock,
    ids: randomIds,
    logger,
    registry: new TokenRegistry(tokens),
  });
  await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  const call = async (method: string, path: string, token: string, body?: object) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  await call('PUT', '/v1/workspaces/bench/workflows/chain', tokens[0].token, { nodes: [{ id: 'a', type: 'noop' }], edges: [] });
  const commits: Record<string, [number, string][]> = { executions: [], timeline: [], audit: [] };
  for (const name of Object.keys(commits))
    app.get(ProjectionSignals).on(name, (p) => void (p !== null && commits[name].push([performance.now(), p])));
  const acknowledged: [number, string][] = [];
  const adminSamples: { events: number; seconds: number }[] = [];
  let running = true;
  const ack = (res: { body: { position?: string } }) => res.body.position && acknowledged.push([performance.now(), res.body.position]);
  const sampler = (async () => {
    while (running) {
      const status = await call('GET', '/v1/admin/projections', tokens[0].token);
      for (const p of status.body.projections) adminSamples.push({ events: p.lag.events, seconds: p.lag.seconds });
      await sleep(1_000);
    }
  })();
  const started = performance.now();
  let executions = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      while (performance.now() - started < LOAD_MS) {
        const start = await call('POST', '/v1/workspaces/bench/workflows/chain/executions', tokens[0].token, {});
        ack(start);
        const view = await call('GET', `/v1/executions/${start.body.executionId}?minPosition=${start.body.position}`, tokens[0].token);
        const path = `/v1/executions/${start.body.executionId}/attempts/${view.body.attempts[0].attemptId}`;
        const claim = await call('POST', `${path}/claim`, tokens[1].token, { workerId: `w${c}` });
        const fence = { workerId: `w${c}`, fencingToken: claim.body.fencingToken };
        ack(await call('POST', `${path}/heartbeat`, tokens[1].token, fence));
        ack(await call('POST', `${path}/complete`, tokens[1].token, { ...fence, outcome: 'succeeded', output: { c } }));
        executions++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await sleep(1_000);
  running = false;
  await sampler;
  await app.close();
  await store.close();
  await sql.close();
  const lagOf = (name: string) => {
    const lags = acknowledged
      .map(([t, position]) => Math.max(0, (commits[name].find(([, p]) => p >= position)?.[0] ?? Infinity) - t))
      .sort((a, b) => a - b);
    const at = (q: number) => round(lags[Math.min(lags.length - 1, Math.floor(q * lags.length))], 1);
    return { p50Ms: at(0.5), p95Ms: at(0.95), p99Ms: at(0.99), maxMs: at(1) };
  };
  return {
    clients: CLIENTS,
    seconds: round(seconds, 1),
    executions,
    executionsPerSec: round(executions / seconds, 1),
    acknowledgedWrites: acknowledged.length,
    lagAfterResponse: { executions: lagOf('executions'), timeline: lagOf('timeline'), audit: lagOf('audit') },
    adminLag: {
      maxEvents: Math.max(...adminSamples.map((s) => s.events)),
      maxSeconds: Math.max(...adminSamples.map((s) => s.seconds)),
      samples: adminSamples.length,
    },
  };
}

async function main(): Promise<void> {
  const server = await startPostgresServer();
  try {
    const builds = await benchBuilds(await createTestDatabase('bench_projections', server.url));
    log('steady lag under API load');
    const lag = await benchLag(await createTestDatabase('bench_projection_lag', server.url));
    const facts = new PgSqlClient({ connectionString: server.url, max: 1 });
    const { rows } = await facts.query<{ version: string }>(`select current_setting('server_version') as version`);
    await facts.close();
    const machine = {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGb: round(totalmem() / 2 ** 30, 1),
      node: process.version,
      postgres: rows[0]?.version,
      loadAverage1m: round(loadavg()[0], 1),
    };
    process.stdout.write(
      `${JSON.stringify({ benchmark: 'projector build/rebuild speed and steady lag', machine, builds, lag }, null, 2)}\n`,
    );
  } finally {
    await server.stop();
  }
}

await main();
