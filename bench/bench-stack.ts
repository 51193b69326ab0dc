import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import type { INestApplication } from '@nestjs/common';
import { createApp } from '../src/app/create-app.js';
import { type WorkerRoute, workerControlPlaneRoute } from '../src/app/in-process-control-plane.js';
import { TokenRegistry } from '../src/auth/token-registry.js';
import type { TokenEntry } from '../src/auth/tokens-file.schema.js';
import { InProcessBus } from '../src/bus/in-process/in-process-bus.js';
import { KafkaBus } from '../src/bus/kafka/kafka-bus.js';
import { loadConfig } from '../src/config/config.js';
import type { Bus } from '../src/core/bus.port.js';
import { type Clock, systemClock } from '../src/core/clock.port.js';
import type { EventStore } from '../src/core/event-store.port.js';
import { randomIds } from '../src/core/ids.js';
import { createLogger, type Logger } from '../src/core/logger.js';
import { PostgresEventStore } from '../src/event-store/postgres/postgres-event-store.js';
import { PgSqlClient } from '../src/postgres/pg-sql-client.js';
import { openPglite } from '../src/app/infrastructure.js';
import type { SqlClient } from '../src/postgres/sql-client.port.js';
import { countSqlTraffic, type SqlTraffic } from './sql-traffic.js';
import { startKafkaBroker } from '../test/support/kafka-broker.js';
import { createTestDatabase, startPostgresServer } from '../test/support/postgres-server.js';

/**
 * What every benchmark that runs Flostra in its own process starts the same way: the stores and
 * the bus (PGlite and the in-process bus, or real PostgreSQL and Kafka), the app with every role
 * listening on loopback, workflows published over HTTP, and the ends of executions followed on
 * the event store's own subscription (no polling of the API).
 */

export interface BenchStack {
  store: EventStore;
  sql: SqlClient;
  /** What the stack asked of its database (every user of `sql` and `store`). */
  sqlTraffic: SqlTraffic;
  bus: Bus;
  /** Kafka's bootstrap brokers, for a worker in another process (none when embedded). */
  brokers: string[];
  close(): Promise<void>;
}

export type BenchStackOptions =
  /** PGlite in memory, or persisted in `dataDir` as `npm start` keeps it under `./.flostra/`. */
  | { mode: 'embedded'; dataDir?: string }
  /** Starts its own PostgreSQL server and Kafka broker, and creates `database` in it. */
  | { mode: 'full'; database: string; clientId: string }
  /** Uses a PostgreSQL database and Kafka brokers someone else started. */
  | { mode: 'external'; databaseUrl: string; brokers: string[]; clientId: string };

/** Kafka's warnings go to stderr with the progress lines: stdout carries a benchmark's JSON report only. */
const stderrLogger = (): Logger => createLogger({ level: 'warn', write: (line) => void process.stderr.write(`${line}\n`) });

export async function openBenchStack(options: BenchStackOptions): Promise<BenchStack> {
  if (options.mode === 'embedded') {
    const { client: sql, traffic: sqlTraffic } = countSqlTraffic(await openPglite(options.dataDir, loadConfig(process.env)));
    const store = await PostgresEventStore.open(sql);
    const bus = new InProcessBus();
    return { store, sql, sqlTraffic, bus, brokers: [], close: closeAll(bus, store, sql) };
  }
  let services:
    { postgres: Awaited<ReturnType<typeof startPostgresServer>>; kafka: Awaited<ReturnType<typeof startKafkaBroker>> } | undefined;
  let databaseUrl: string;
  let brokers: string[];
  if (options.mode === 'full') {
    services = { postgres: await startPostgresServer(), kafka: await startKafkaBroker({ reuseExisting: false }) };
    databaseUrl = await createTestDatabase(options.database, services.postgres.url);
    brokers = services.kafka.brokers;
  } else {
    databaseUrl = options.databaseUrl;
    brokers = options.brokers;
  }
  const { client: sql, traffic: sqlTraffic } = countSqlTraffic(new PgSqlClient({ connectionString: databaseUrl, max: 20 }));
  const store = await PostgresEventStore.open(sql);
  const bus = new KafkaBus({ brokers, clientId: options.clientId, logger: stderrLogger() });
  const close = closeAll(bus, store, sql);
  return {
    store,
    sql,
    sqlTraffic,
    bus,
    brokers,
    close: async () => {
      await close();
      await services?.kafka.stop();
      await services?.postgres.stop();
    },
  };
}

function closeAll(bus: Bus, store: EventStore, sql: SqlClient): () => Promise<void> {
  return async () => {
    await bus.close();
    await store.close();
    await sql.close();
  };
}

export interface BenchApp {
  app: INestApplication;
  url: string;
  logger: Logger;
  /**
   * Where a worker in this process sends its claims: in process unless FLOSTRA_WORKER_TRANSPORT=http;
   * its results: to the ingestor in process when it claims in process, unless FLOSTRA_WORKER_RESULTS=bus;
   * and its dispatches: handed over by the dispatcher in process, unless FLOSTRA_WORKER_DISPATCH=bus.
   */
  workerRoute(token: string): WorkerRoute;
}

/** Every role of the app on the stack, silent, listening on a free loopback port; `clock` is the real one unless given. */
export async function startBenchApp(stack: BenchStack, tokens: readonly TokenEntry[], clock: Clock = systemClock): Promise<BenchApp> {
  const logger = createLogger({ level: 'silent' });
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    FLOSTRA_WORKER_TRANSPORT: process.env.FLOSTRA_WORKER_TRANSPORT,
    FLOSTRA_WORKER_RESULTS: process.env.FLOSTRA_WORKER_RESULTS,
    FLOSTRA_WORKER_DISPATCH: process.env.FLOSTRA_WORKER_DISPATCH,
    FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN: process.env.FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN,
  });
  const app = await createApp({
    config,
    store: stack.store,
    readModelSql: stack.sql,
    bus: stack.bus,
    clock,
    ids: randomIds,
    logger,
    registry: new TokenRegistry(tokens),
  });
  await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  return { app, url, logger, workerRoute: (token) => workerControlPlaneRoute(app, config, token, url) };
}

/** PUT a workflow into workspace `bench`; throws on anything but success. */
export async function publishBenchWorkflow(url: string, token: string, name: string, graph: unknown): Promise<void> {
  const response = await fetch(`${url}/v1/workspaces/bench/workflows/${name}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(graph),
  });
  if (!response.ok) throw new Error(`publishing ${name} answered ${response.status}: ${await response.text()}`);
}

export const EXECUTION_ENDS: ReadonlySet<string> = new Set([
  'ExecutionSucceeded',
  'ExecutionFailed',
  'ExecutionTimedOut',
  'ExecutionCancelled',
]);

export interface EndFollower {
  /** Ends the subscription and waits for it to let go. */
  stop(): Promise<void>;
}

/**
 * Calls `onEnds` with each batch of executions that ended after now (id and end event type), as
 * the event store's subscription delivers them.
 */
export async function followExecutionEnds(
  store: EventStore,
  onEnds: (ends: { executionId: string; type: string }[]) => void,
  log: (message: string) => void,
): Promise<EndFollower> {
  const abort = new AbortController();
  const head = await store.headPosition();
  const following = (async () => {
    for await (const batch of store.subscribeToAll({ after: head, streamPrefixes: ['execution-'], signal: abort.signal })) {
      const ends = batch
        .filter((event) => EXECUTION_ENDS.has(event.type))
        .map((event) => ({ executionId: event.streamId.slice('execution-'.length), type: event.type }));
      if (ends.length > 0) onEnds(ends);
    }
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) log(`subscription failed: ${String(error)}`);
  });
  return {
    stop: async () => {
      abort.abort();
      await following;
    },
  };
}

/** CPU seconds (user + system) process `pid` used so far, from /proc/<pid>/stat. */
export function processCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks
}
