import type { INestApplication } from '@nestjs/common';
import { createApp } from '../src/app/create-app.js';
import { TokenRegistry } from '../src/auth/token-registry.js';
import { loadConfig } from '../src/config/config.js';
import { systemClock } from '../src/core/clock.port.js';
import { randomIds } from '../src/core/ids.js';
import { InProcessBus } from '../src/bus/in-process/in-process-bus.js';
import { KafkaBus } from '../src/bus/kafka/kafka-bus.js';
import type { Bus } from '../src/core/bus.port.js';
import type { EventStore } from '../src/core/event-store.port.js';
import { createLogger } from '../src/core/logger.js';
import { PostgresEventStore } from '../src/event-store/postgres/postgres-event-store.js';
import { PgSqlClient } from '../src/postgres/pg-sql-client.js';
import { PgliteSqlClient } from '../src/postgres/pglite-sql-client.js';
import type { SqlClient } from '../src/postgres/sql-client.port.js';
import { startKafkaBroker } from '../test/support/kafka-broker.js';
import { createTestDatabase, startPostgresServer } from '../test/support/postgres-server.js';

/**
 * The stores and bus a benchmark runs on: `embedded` (PGlite + in-process bus) or, for any
 * other mode, a real PostgreSQL and a real Kafka started for it (a database named `database`).
 */
export interface Stack {
  store: EventStore;
  sql: SqlClient;
  bus: Bus;
  /** Kafka's bootstrap brokers, for a worker in another process. */
  brokers: string[];
  close(): Promise<void>;
}

export async function openStack(mode: string, database = 'bench_e2e'): Promise<Stack> {
  if (mode === 'embedded') {
    const sql = await PgliteSqlClient.open();
    const store = await PostgresEventStore.open(sql);
    const bus = new InProcessBus();
    return {
      store,
      sql,
      bus,
      brokers: [],
      close: async () => {
        await bus.close();
        await store.close();
        await sql.close();
      },
    };
  }
  const postgres = await startPostgresServer();
  const kafka = await startKafkaBroker({ reuseExisting: false });
  const url = await createTestDatabase(database, postgres.url);
  const sql = new PgSqlClient({ connectionString: url, max: 20 });
  const store = await PostgresEventStore.open(sql);
  // Kafka's warnings go with the progress lines: stdout carries the JSON report only.
  const bus = new KafkaBus({
    brokers: kafka.brokers,
    clientId: 'bench',
    logger: createLogger({ level: 'warn', write: (line) => void process.stderr.write(`${line}\n`) }),
  });
  return {
    store,
    sql,
    bus,
    brokers: kafka.brokers,
    close: async () => {
      await bus.close();
      await store.close();
      await sql.close();
      await kafka.stop();
      await postgres.stop();
    },
  };
}

/** The whole app on `stack`, listening on a loopback port, with one token (admin of `bench`, worker). */
export async function startBenchApp(stack: Stack, token: string): Promise<{ app: INestApplication; url: string }> {
  const registry = new TokenRegistry([{ token, subject: 'bench', workspaces: { bench: 'admin' }, global: ['worker'] }]);
  const app = await createApp({
    config: loadConfig({ LOG_LEVEL: 'silent' }),
    store: stack.store,
    readModelSql: stack.sql,
    bus: stack.bus,
    clock: systemClock,
    ids: randomIds,
    logger: createLogger({ level: 'silent' }),
    registry,
  });
  await app.listen(0, '127.0.0.1');
  return { app, url: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
}
