import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, type AppConfig } from '../config/config.js';
import type { EventStore } from '../core/event-store.port.js';
import type { Logger } from '../core/logger.js';
import { PostgresEventStore } from '../event-store/postgres/postgres-event-store.js';
import { PgSqlClient } from '../postgres/pg-sql-client.js';
import { PgliteSqlClient } from '../postgres/pglite-sql-client.js';
import type { SqlClient } from '../postgres/sql-client.port.js';

export interface Infrastructure {
  store: EventStore;
  /** Client of the event store's Postgres (absent for KurrentDB). */
  sql: SqlClient;
  /** Read models, checkpoints and other process state: DATABASE_URL, else the event store's Postgres. */
  readModelSql: SqlClient;
  close(): Promise<void>;
}

/** Opens the stores the configuration names: PGlite under the data dir, or real Postgres. */
export async function openInfrastructure(config: AppConfig, logger: Logger): Promise<Infrastructure> {
  const log = logger.child({ component: 'infrastructure' });
  let sql: SqlClient;
  switch (config.eventStore.kind) {
    case 'pglite': {
      const dir = join(config.dataDir, 'pgdata');
      await mkdir(dir, { recursive: true });
      sql = await PgliteSqlClient.open(dir);
      log.info('embedded PGlite opened', { dataDir: dir });
      break;
    }
    case 'postgres':
      sql = new PgSqlClient({ connectionString: config.eventStore.url, max: 20 }, { onError: (error) => log.warn('postgres connection error', { error: String(error) }) });
      break;
    case 'kurrentdb':
      throw new ConfigError('EVENT_STORE_URL: the KurrentDB adapter is not available yet; use postgres:// or leave it unset', ['EVENT_STORE_URL']);
  }
  const store = await PostgresEventStore.open(sql, {
    onNotifyError: (error) => log.warn('event wake-up notification failed; subscribers fall back to polling', { error: String(error) }),
  });
  const readModelSql = config.databaseUrl
    ? new PgSqlClient({ connectionString: config.databaseUrl, max: 20 }, { onError: (error) => log.warn('read-model postgres connection error', { error: String(error) }) })
    : sql;
  return {
    store,
    sql,
    readModelSql,
    async close() {
      await store.close();
      if (readModelSql !== sql) await readModelSql.close();
      await sql.close();
    },
  };
}
