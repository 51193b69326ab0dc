import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createInterface } from 'node:readline';
import { createApp } from '../src/app/create-app.js';
import { TokenRegistry } from '../src/auth/token-registry.js';
import { InProcessBus } from '../src/bus/in-process/in-process-bus.js';
import { KafkaBus } from '../src/bus/kafka/kafka-bus.js';
import { loadConfig } from '../src/config/config.js';
import type { Bus } from '../src/core/bus.port.js';
import { systemClock } from '../src/core/clock.port.js';
import { randomIds } from '../src/core/ids.js';
import { createLogger } from '../src/core/logger.js';
import { PostgresEventStore } from '../src/event-store/postgres/postgres-event-store.js';
import { PgSqlClient } from '../src/postgres/pg-sql-client.js';
import { PgliteSqlClient } from '../src/postgres/pglite-sql-client.js';
import type { SqlClient } from '../src/postgres/sql-client.port.js';
import { createWorker } from '../src/worker/runtime/create-worker.js';

/**
 * Flostra as one system under test of `bench:peers` (bench/peers.bench.ts), in a process of its
 * own so that its CPU and memory are its own: every role and the worker in this process, as in
 * `bench:e2e`'s `full` and `embedded` modes. The benchmark starts executions over Flostra's HTTP
 * API; this process sees each end on the event store's own subscription (no polling of the API)
 * and reports it as one line `done <executionId>` on stdout.
 *
 * Environment: PEERS_FLOSTRA_MODE (`full` or `embedded`), PEERS_DATABASE_URL and
 * PEERS_KAFKA_BROKERS (full), PEERS_TOKEN. First stdout line: `ready <url>`.
 * Commands on stdin: `profile-start`, `profile-stop <file>` (a V8 CPU profile of this process,
 * the same profiler as `node --cpu-prof`, over exactly the span between the two), `stop`.
 */

const DIAMOND = {
  nodes: ['a', 'b', 'c', 'd'].map((id) => ({ id, type: 'noop' })),
  edges: [
    { from: 'a', to: 'b' },
    { from: 'a', to: 'c' },
    { from: 'b', to: 'd' },
    { from: 'c', to: 'd' },
  ],
};

const mode = process.env.PEERS_FLOSTRA_MODE ?? 'embedded';
const token = process.env.PEERS_TOKEN ?? 'bench-token';
const say = (line: string) => process.stdout.write(`${line}\n`);

async function main() {
  let sql: SqlClient;
  let bus: Bus;
  if (mode === 'full') {
    sql = new PgSqlClient({ connectionString: required('PEERS_DATABASE_URL'), max: 20 });
    bus = new KafkaBus({
      brokers: required('PEERS_KAFKA_BROKERS').split(','),
      clientId: 'bench-peers',
      logger: createLogger({ level: 'warn', write: (line) => void process.stderr.write(`${line}\n`) }),
    });
  } else {
    sql = await PgliteSqlClient.open();
    bus = new InProcessBus();
  }
  const store = await PostgresEventStore.open(sql);
  const logger = createLogger({ level: 'silent' });
  const registry = new TokenRegistry([{ token, subject: 'bench', workspaces: { bench: 'admin' }, global: ['worker'] }]);
  const app = await createApp({
    config: loadConfig({ LOG_LEVEL: 'silent' }),
    store,
    readModelSql: sql,
    bus,
    clock: systemClock,
    ids: randomIds,
    logger,
    registry,
  });
  await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  const worker = createWorker({ bus, apiUrl: url, token, logger, concurrency: 16, egressAllow: [] });
  await worker.start();
  const published = await fetch(`${url}/v1/workspaces/bench/workflows/diamond`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(DIAMOND),
  });
  if (!published.ok) throw new Error(`publishing the diamond answered ${published.status}: ${await published.text()}`);

  // Completion from the log itself, as bench:e2e sees it; ends go out in one write per batch.
  const abort = new AbortController();
  const head = await store.headPosition();
  const following = (async () => {
    for await (const batch of store.subscribeToAll({ after: head, streamPrefixes: ['execution-'], signal: abort.signal })) {
      let lines = '';
      for (const event of batch) {
        if (event.type === 'ExecutionSucceeded' || event.type === 'ExecutionFailed')
          lines += `done ${event.streamId.slice('execution-'.length)}\n`;
      }
      if (lines !== '') process.stdout.write(lines);
    }
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) process.stderr.write(`[flostra-host] subscription failed: ${String(error)}\n`);
  });

  let profiler: Session | undefined;
  const stop = async () => {
    abort.abort();
    await worker.stop();
    await app.close();
    await following;
    await bus.close();
    await store.close();
    await sql.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [command, argument] = line.trim().split(' ');
    void (async () => {
      if (command === 'profile-start') {
        profiler = new Session();
        profiler.connect();
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
        say('profiling');
      } else if (command === 'profile-stop' && profiler !== undefined && argument !== undefined) {
        const { profile } = await profiler.post('Profiler.stop');
        writeFileSync(argument, JSON.stringify(profile));
        profiler.disconnect();
        profiler = undefined;
        say(`profiled ${argument}`);
      } else if (command === 'stop') await stop();
    })().catch((error: unknown) => process.stderr.write(`[flostra-host] ${command} failed: ${String(error)}\n`));
  });
  say(`ready ${url}`);
}

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

main().catch((error: unknown) => {
  process.stderr.write(`[flostra-host] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
