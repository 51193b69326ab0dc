import { PGlite } from '@electric-sql/pglite';
import type { SqlClient, SqlQueryable, TransactionOptions } from './sql-client.port.js';

/**
 * SqlClient over one PGlite instance (the embedded mode). PGlite is a single connection:
 * every transaction goes through its `transaction()` API, which queues callers, so concurrent
 * requests never interleave BEGIN/COMMIT. Inside `transaction(fn)`, `fn` must use `tx` only:
 * a query on the client itself would wait for the transaction that waits for it.
 */
export class PgliteSqlClient implements SqlClient {
  constructor(readonly db: PGlite) {}

  /** Opens a database persisted in `dataDir` (created if missing), or in memory when absent. */
  static async open(dataDir?: string): Promise<PgliteSqlClient> {
    const db = dataDir === undefined ? await PGlite.create() : await PGlite.create(dataDir);
    return new PgliteSqlClient(db);
  }

  async query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }> {
    const result = await this.db.query<T>(sql, params);
    return { rows: result.rows };
  }

  transaction<T>(fn: (tx: SqlQueryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.db.transaction(async (tx) => {
      if (options.asynchronousCommit === true) await tx.query('set local synchronous_commit = off');
      return fn({ query: async <R>(sql: string, params?: unknown[]) => ({ rows: (await tx.query<R>(sql, params)).rows }) });
    });
  }

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) {
      // PGlite sends the channel unquoted; only plain lower-case names survive that unchanged.
      throw new Error(`unsupported channel name for PGlite: ${channel}`);
    }
    const unlisten = await this.db.listen(channel, onNotify);
    return () => unlisten();
  }

  async notify(channel: string, payload: string): Promise<void> {
    await this.db.query('select pg_notify($1, $2)', [channel, payload]);
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
