import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppConfig } from '../config/config.js';
import type { EventStore } from '../core/event-store.port.js';
import type { Logger } from '../core/logger.js';
import { KurrentDbEventStore } from '../event-store/kurrentdb/kurrentdb-event-store.js';
import { PostgresEventStore } from '../event-store/postgres/postgres-event-store.js';
import { PgSqlClient } from '../postgres/pg-sql-client.js';
import { PgliteSqlClient } from '../postgres/pglite-sql-client.js';
import { PgliteThreadSqlClient } from '../postgres/pglite-thread-sql-client.js';
import type { SqlClient } from '../postgres/sql-client.port.js';
import type { Bus } from '../core/bus.port.js';
import { InProcessBus } from '../bus/in-process/in-process-bus.js';
import { KafkaBus } from '../bus/kafka/kafka-bus.js';

export interface Infrastructure {
  store: EventStore;
  /** Client of the event store's Postgres (absent for KurrentDB). */
  sql: SqlClient;
  /** Read models, checkpoints and other process state: DATABASE_URL, else the event store's Postgres. */
  readModelSql: SqlClient;
  /** Kafka when KAFKA_BROKERS is set, else the in-process bus. */
  bus: Bus;
  close(): Promise<void>;
}

/** The embedded PGlite in `dir` (or in memory), on the thread the configuration names. */
export function openPglite(dir: string | undefined, config: Pick<AppConfig, 'pgliteThread'>): Promise<SqlClient> {
  return config.pgliteThread === 'own' ? PgliteThreadSqlClient.open(dir) : PgliteSqlClient.open(dir);
}

/** Opens the stores the configuration names: PGlite under the data dir, real Postgres, or KurrentDB. */
export async function openInfrastructure(config: AppConfig, logger: Logger): Promise<Infrastructure> {
  const log = logger.child({ component: 'infrastructure' });
  let sql: SqlClient;
  let kurrentDb: KurrentDbEventStore | null = null;
  switch (config.eventStore.kind) {
    case 'pglite': {
      const dir = join(config.dataDir, 'pgdata');
      await mkdir(dir, { recursive: true });
      sql = await openPglite(dir, config);
      log.info('embedded PGlite opened', { dataDir: dir, thread: config.pgliteThread });
      break;
    }
    case 'postgres':
      sql = new PgSqlClient(
        { connectionString: config.eventStore.url, max: 20 },
        { onError: (error) => log.warn('postgres connection error', { error: String(error) }) },
      );
      break;
    case 'kurrentdb': {
      // KurrentDB holds the log; read models, checkpoints and process state stay in Postgres:
      // DATABASE_URL, else the embedded PGlite under the data dir (one process only).
      kurrentDb = KurrentDbEventStore.connect(config.eventStore.url);
      if (config.databaseUrl) {
        sql = new PgSqlClient(
          { connectionString: config.databaseUrl, max: 20 },
          { onError: (error) => log.warn('postgres connection error', { error: String(error) }) },
        );
      } else {
        const dir = join(config.dataDir, 'pgdata');
        await mkdir(dir, { recursive: true });
        sql = await openPglite(dir, config);
      }
      log.info('KurrentDB event store configured', { readModels: config.databaseUrl ? 'DATABASE_URL' : 'embedded PGlite' });
      break;
    }
  }
  const store =
    kurrentDb ??
    (await PostgresEventStore.open(sql, {
      onNotifyError: (error) => log.warn('event wake-up notification failed; subscribers fall back to polling', { error: String(error) }),
    }));
  const readModelSql =
    config.databaseUrl && kurrentDb === null
      ? new PgSqlClient(
          { connectionString: config.databaseUrl, max: 20 },
          { onError: (error) => log.warn('read-model postgres connection error', { error: String(error) }) },
        )
      : sql;
  const bus: Bus = config.kafkaBrokers
    ? new KafkaBus({ brokers: [...config.kafkaBrokers], clientId: 'flostra', logger: log, sessionTimeoutMs: config.kafkaSessionTimeoutMs })
    : new InProcessBus();
  return {
    store,
    sql,
    readModelSql,
    bus,
    async close() {
      await bus.close();
      await store.close();
      if (readModelSql !== sql) await readModelSql.close();
      await sql.close();
    },
  };
}
