import type { NestExpressApplication } from '@nestjs/platform-express';
import { createApp } from '../../src/app/create-app.js';
import { InProcessControlPlane, workerHandOver } from '../../src/app/in-process-control-plane.js';
import { InProcessResultSink } from '../../src/app/in-process-result-sink.js';
import { TokenRegistry } from '../../src/auth/token-registry.js';
import { loadTokens } from '../../src/auth/tokens.loader.js';
import type { TokenEntry } from '../../src/auth/tokens-file.schema.js';
import { type AppConfig, codeShare, loadConfig, runsRole, transformLimits } from '../../src/config/config.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { randomIds } from '../../src/core/ids.js';
import { createLogger, type Logger, type LogThreshold } from '../../src/core/logger.js';
import { PostgresEventStore } from '../../src/event-store/postgres/postgres-event-store.js';
import { PgSqlClient } from '../../src/postgres/pg-sql-client.js';
import { openPglite } from '../../src/app/infrastructure.js';
import { AdjustableClock } from './adjustable-clock.js';
import { createTestDatabase } from './postgres-server.js';
import type { SqlClient } from '../../src/postgres/sql-client.port.js';
import { KurrentDbEventStore } from '../../src/event-store/kurrentdb/kurrentdb-event-store.js';
import { KurrentDbDouble } from './kurrentdb-double/kurrentdb-double.js';
import type { Bus } from '../../src/core/bus.port.js';
import { InProcessBus } from '../../src/bus/in-process/in-process-bus.js';
import { createWorker } from '../../src/worker/runtime/create-worker.js';
import type { WorkerService } from '../../src/worker/runtime/worker.service.js';
import type { ProjectorOptions } from '../../src/projector/projector.js';
import { ReadConsistency } from '../../src/projector/read-consistency.js';
import { PROJECTION_DEFINITIONS } from '../../projections/projections.registry.js';
import { enableResponseChecks, type ResponseViolation } from '../../src/http/openapi/response-checks.js';
import { METRICS } from '../../src/core/metrics.port.js';

export type StoreKind = 'pglite' | 'postgres' | 'kurrentdb';
export const STORE_KINDS: StoreKind[] = ['pglite', 'postgres'];
/** Every event store, KurrentDB over its gRPC test double (read models then on PGlite). */
export const ALL_STORE_KINDS: StoreKind[] = ['pglite', 'postgres', 'kurrentdb'];

/** Bearer tokens of the test principals: two workspaces, each role, a worker. */
export const TOKENS = {
  adminA: 'token-admin-a',
  editorA: 'token-editor-a',
  operatorA: 'token-operator-a',
  viewerA: 'token-viewer-a',
  adminB: 'token-admin-b',
  worker: 'token-worker',
  systemAdmin: 'token-system-admin',
  metrics: 'token-metrics',
  taskWorkerA: 'token-task-worker-a',
  taskWorkerB: 'token-task-worker-b',
} as const;

/** The grants of `TOKENS`, as the test app's registry holds them. */
export const TOKEN_ENTRIES: readonly TokenEntry[] = [
  { token: TOKENS.adminA, subject: 'alice', workspaces: { 'ws-a': 'admin' }, global: [] },
  { token: TOKENS.editorA, subject: 'eve', workspaces: { 'ws-a': 'editor' }, global: [] },
  { token: TOKENS.operatorA, subject: 'oscar', workspaces: { 'ws-a': 'operator' }, global: [] },
  { token: TOKENS.viewerA, subject: 'victor', workspaces: { 'ws-a': 'viewer' }, global: [] },
  { token: TOKENS.adminB, subject: 'bob', workspaces: { 'ws-b': 'admin' }, global: [] },
  { token: TOKENS.worker, subject: 'worker', workspaces: {}, global: ['worker'] },
  { token: TOKENS.systemAdmin, subject: 'root', workspaces: {}, global: ['system-admin'] },
  { token: TOKENS.metrics, subject: 'prometheus', workspaces: {}, global: ['metrics'] },
  { token: TOKENS.taskWorkerA, subject: 'billing-service', workspaces: { 'ws-a': 'task-worker' }, global: [] },
  { token: TOKENS.taskWorkerB, subject: 'billing-service-b', workspaces: { 'ws-b': 'task-worker' }, global: [] },
];

export interface TestApp {
  url: string;
  store: EventStore;
  clock: AdjustableClock;
  app: NestExpressApplication;
  bus: Bus;
  worker: WorkerService | null;
  /** The database of the read models (the store's own). */
  readModelSql: SqlClient;
  /** The Postgres database of store and read models (kind `postgres`): pass it as `databaseUrl` to start another process on it. */
  databaseUrl: string | null;
  /** Responses that broke their route's contract so far (each also answered 500); `close()` fails on any. */
  responseViolations: readonly ResponseViolation[];
  /** Resolves once every live read model has applied the log up to its head (or `position`). */
  waitForProjections(position?: string | null): Promise<void>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** The bus: in-process by default; pass a KafkaBus for the full stack. */
  bus?: Bus;
  /** Also run a worker (over HTTP to this app, or in process: see `workerTransport`; on the same bus, its results too unless `workerResults` says otherwise). */
  worker?: boolean | { concurrency?: number; egressAllow?: string[] };
  /** Projector tunables and hooks (batch sizes, fault injection). */
  projector?: Partial<ProjectorOptions>;
  /** What the app and its worker log to; by default FLOSTRA_TEST_LOG_LEVEL's level on stdout. */
  logger?: Logger;
  /** Kind `postgres`: open this database (another app's `databaseUrl`) instead of a new one, as a second process would. */
  databaseUrl?: string;
}

/**
 * Opens a fresh store of the given kind (in-memory PGlite, or a new database on the test server).
 * PGlite runs where `pgliteThread` says, by default where the app's configuration puts it.
 */
export async function openTestStore(
  kind: StoreKind,
  databaseUrl?: string,
  pgliteThread: AppConfig['pgliteThread'] = loadConfig({}).pgliteThread,
): Promise<{ store: EventStore; sql: SqlClient; url: string | null; close(): Promise<void> }> {
  if (kind === 'pglite') {
    const client = await openPglite(undefined, { pgliteThread });
    const store = await PostgresEventStore.open(client);
    return {
      store,
      sql: client,
      url: null,
      close: async () => {
        await store.close();
        await client.close();
      },
    };
  }
  if (kind === 'kurrentdb') {
    const double = await KurrentDbDouble.start();
    const store = KurrentDbEventStore.connect(double.url);
    const client = await openPglite(undefined, { pgliteThread });
    return {
      store,
      sql: client,
      url: null,
      close: async () => {
        await store.close();
        await client.close();
        await double.stop();
      },
    };
  }
  const url = databaseUrl ?? (await createTestDatabase('e2e'));
  const client = new PgSqlClient({ connectionString: url, max: 20 });
  const store = await PostgresEventStore.open(client);
  return {
    store,
    sql: client,
    url,
    close: async () => {
      await store.close();
      await client.close();
    },
  };
}

/**
 * How a test app's worker reaches it: over HTTP unless the test's env says
 * FLOSTRA_WORKER_TRANSPORT=in-process, or FLOSTRA_TEST_WORKER_TRANSPORT does so for a whole run
 * (`FLOSTRA_TEST_WORKER_TRANSPORT=in-process npm run test:only -- <suites>`).
 */
export function workerTransport(config: AppConfig): 'in-process' | 'http' {
  if (config.workerTransport !== 'auto') return config.workerTransport;
  return process.env.FLOSTRA_TEST_WORKER_TRANSPORT === 'in-process' ? 'in-process' : 'http';
}

/**
 * Where a test app's worker sends its results: to the app's ingestor directly when the test's env
 * says so (FLOSTRA_WORKER_RESULTS=in-process), or when it says FLOSTRA_WORKER_TRANSPORT=in-process
 * and leaves FLOSTRA_WORKER_RESULTS at `auto`, as `workerResultsOf` does in a process; else to the
 * bus. FLOSTRA_TEST_WORKER_TRANSPORT does not move them: the suites that break the results topic
 * (worker-faults, kafka-faults) exercise the bus's way in whatever transport a run uses.
 */
export function workerResults(config: AppConfig): 'in-process' | 'bus' {
  if (config.workerResults !== 'auto') return config.workerResults;
  return config.workerTransport === 'in-process' && runsRole(config, 'ingestor') ? 'in-process' : 'bus';
}

/**
 * Whether the test app's dispatcher hands dispatches to its worker in memory: when the test's env
 * says FLOSTRA_WORKER_DISPATCH=in-process, or FLOSTRA_TEST_WORKER_DISPATCH does so for a whole run;
 * else every dispatch goes on the bus, the way the suites that break the bus expect.
 */
export function workerDispatch(config: AppConfig): 'in-process' | 'bus' {
  if (config.workerDispatch !== 'auto') return config.workerDispatch;
  return process.env.FLOSTRA_TEST_WORKER_DISPATCH === 'in-process' ? 'in-process' : 'bus';
}

function testLogLevel(): LogThreshold {
  const level = process.env.FLOSTRA_TEST_LOG_LEVEL;
  return level === 'debug' || level === 'info' || level === 'warn' || level === 'error' ? level : 'silent';
}

/** The whole HTTP application on 127.0.0.1, over a real store, with an adjustable clock. */
export async function startTestApp(kind: StoreKind, env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const config = loadConfig({ LOG_LEVEL: 'silent', ...env });
  const opened = await openTestStore(kind, options.databaseUrl, config.pgliteThread);
  const clock = new AdjustableClock();
  // FLOSTRA_TEST_LOG_LEVEL=error shows what a test's app logged, e.g. the cause of a 500.
  const logger = options.logger ?? createLogger({ level: testLogLevel() });
  const bus = options.bus ?? new InProcessBus();
  // With FLOSTRA_TOKENS_FILE in `env`, the grants come from that file and follow its changes, as in main.ts.
  const tokens = config.tokensFile !== null ? await loadTokens(config, logger) : null;
  if (config.tokensReload === 'watch') tokens?.reloader.watch();
  const app = await createApp({
    config,
    store: opened.store,
    readModelSql: opened.sql,
    bus,
    clock,
    ids: randomIds,
    logger,
    registry: tokens?.registry ?? new TokenRegistry(TOKEN_ENTRIES),
    projector: options.projector,
  });
  // Every response of every suite is checked against its route's OpenAPI contract.
  const checks = enableResponseChecks(app, logger);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  let worker: WorkerService | null = null;
  if (options.worker) {
    const settings = options.worker === true ? {} : options.worker;
    const token = config.workerToken ?? TOKENS.worker;
    worker = createWorker({
      ...(workerTransport(config) === 'in-process' ? { controlPlane: InProcessControlPlane.of(app, token) } : { apiUrl: url, token }),
      ...(workerResults(config) === 'in-process' ? { results: InProcessResultSink.of(app) } : {}),
      ...workerHandOver(app, workerDispatch(config)),
      bus,
      logger,
      concurrency: settings.concurrency ?? 4,
      egressAllow: settings.egressAllow ?? [],
      transform: transformLimits(config),
      code: codeShare(config),
      // The app's own metrics, as main.ts gives a worker that shares its process.
      metrics: app.get(METRICS),
    });
    await worker.start();
  }
  return {
    url,
    bus,
    worker,
    store: opened.store,
    clock,
    app,
    readModelSql: opened.sql,
    databaseUrl: opened.url,
    responseViolations: checks.violations,
    waitForProjections: async (position) => {
      const target = position ?? (await opened.store.headPosition());
      if (target === null) return;
      const consistency = app.get(ReadConsistency);
      for (const definition of PROJECTION_DEFINITIONS) await consistency.waitFor(definition.name, { kind: 'position', position: target });
    },
    async close() {
      tokens?.reloader.close();
      await worker?.stop();
      await app.close();
      if (!options.bus) await bus.close();
      await opened.close();
      if (checks.violations.length > 0) {
        const list = checks.violations.map(
          (v) => `- ${v.route} → ${v.status}: ${v.detail}${v.issues.map((i) => `\n    ${i.path}: ${i.message}`).join('')}`,
        );
        throw new Error(`responses broke their OpenAPI contract (fix the contract, or the code):\n${list.join('\n')}`);
      }
    },
  };
}

/**
 * A worker in this process, over HTTP to the app at `apiUrl`, on `bus`, in consumer group
 * `groupId`: a group of its own need not wait out the Kafka session of a member some earlier
 * test killed. Loopback egress allowed; silent.
 */
export async function startWorkerInGroup(bus: Bus, apiUrl: string, groupId: string): Promise<WorkerService> {
  const worker = createWorker({
    bus,
    apiUrl,
    token: TOKENS.worker,
    logger: createLogger({ level: 'silent' }),
    concurrency: 4,
    egressAllow: ['127.0.0.1/32'],
    groupId,
  });
  await worker.start();
  return worker;
}
