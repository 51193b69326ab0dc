import { PGlite } from '@electric-sql/pglite';
import { InProcessSessionLocks } from './in-process-session-locks.js';
import { statementText, type SessionLocks, type SqlClient, type SqlTransaction, type Statement, type TransactionOptions } from './sql-client.port.js';

/**
 * SqlClient over one PGlite instance (the embedded mode). PGlite is a single connection:
 * every transaction goes through its `transaction()` API, which queues callers, so concurrent
 * requests never interleave BEGIN/COMMIT. Inside `transaction(fn)`, `fn` must use `tx` only:
 * a query on the client itself would wait for the transaction that waits for it.
 */
export class PgliteSqlClient implements SqlClient {
  readonly inProcess = true;
  private readonly listeners = new Map<string, Set<{ onNotify: (payload: string) => void }>>();

  constructor(readonly db: PGlite) {}

  /** Opens a database persisted in `dataDir` (created if missing), or in memory when absent. */
  static async open(dataDir?: string): Promise<PgliteSqlClient> {
    const db = dataDir === undefined ? await PGlite.create() : await PGlite.create(dataDir);
    return new PgliteSqlClient(db);
  }

  sessionLocks(): SessionLocks {
    return new InProcessSessionLocks(this);
  }

  async query<T>(sql: Statement, params?: unknown[]): Promise<{ rows: T[] }> {
    const result = await this.db.query<T>(statementText(sql), params);
    return { rows: result.rows };
  }

  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.db.transaction(async (tx) => {
      if (options.asynchronousCommit === true) await tx.query('set local synchronous_commit = off');
      // Queued writes run in order with the rest; the first to fail fails the transaction.
      const queued: Promise<void>[] = [];
      let failed: { error: unknown } | undefined;
      const result = await fn({
        query: async <R>(sql: Statement, params?: unknown[]) => ({ rows: (await tx.query<R>(statementText(sql), params)).rows }),
        queue: (sql: Statement, params?: unknown[]) =>
          void queued.push(tx.query(statementText(sql), params).then(() => undefined, (error: unknown) => void (failed ??= { error }))),
      });
      await Promise.all(queued);
      if (failed !== undefined) throw failed.error;
      return result;
    });
  }

  /**
   * A PGlite database belongs to this one process, so its listeners are all here: wake-ups are
   * handed over in memory instead of as a NOTIFY through the database (a query saved per append).
   */
  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    const listeners = this.listeners.get(channel) ?? new Set();
    this.listeners.set(channel, listeners);
    // Each registration is its own entry, so listening twice with one callback is two listeners.
    const entry = { onNotify };
    listeners.add(entry);
    return async () => {
      listeners.delete(entry);
    };
  }

  async notify(channel: string, payload: string): Promise<void> {
    // Delivered after the caller's turn, as a NOTIFY would be: never inside the notifier's code.
    for (const { onNotify } of this.listeners.get(channel) ?? []) setImmediate(() => onNotify(payload));
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
