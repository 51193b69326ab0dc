import pg from 'pg';
import { PgSignalConnection } from './pg-signal-connection.js';
import type { SqlClient, SqlQueryable, Statement, TransactionOptions } from './sql-client.port.js';

export interface PgSqlClientOptions {
  /**
   * Failures outside any caller's request: an idle pooled connection that died (the pool
   * replaces it) or a lost LISTEN connection (it reconnects). Reported, never fatal.
   */
  onError?: (error: unknown) => void;
}

/** SqlClient over a node-postgres pool, plus one dedicated connection for LISTEN/NOTIFY. */
export class PgSqlClient implements SqlClient {
  readonly pool: pg.Pool;
  private readonly signals: PgSignalConnection;
  private readonly writeEndedListeners = new Set<() => void>();

  constructor(config: pg.PoolConfig, options: PgSqlClientOptions = {}) {
    const onError = options.onError ?? (() => undefined);
    this.pool = new pg.Pool(config);
    // Without a listener, an idle connection's error would crash the process.
    this.pool.on('error', onError);
    this.signals = new PgSignalConnection(config, onError);
  }

  async query<T>(sql: Statement, params?: unknown[]): Promise<{ rows: T[] }> {
    const result = await this.pool.query(queryConfig(sql, params));
    return { rows: result.rows as T[] };
  }

  async transaction<T>(fn: (tx: SqlQueryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const client = await this.pool.connect();
    const tx: SqlQueryable = {
      query: async <R>(sql: Statement, params?: unknown[]) => ({ rows: (await client.query(queryConfig(sql, params))).rows as R[] }),
    };
    try {
      // One simple-protocol query carries both statements: one round trip, not two.
      await client.query(options.asynchronousCommit === true ? 'begin; set local synchronous_commit = off' : 'begin');
      const result = await fn(tx);
      await client.query('commit');
      client.release();
      return result;
    } catch (error) {
      try {
        await client.query('rollback');
        client.release();
      } catch (rollbackError) {
        // The connection is in an unknown state: destroy it rather than hand it to the next caller.
        client.release(rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError)));
      }
      throw error;
    } finally {
      this.writeEnded();
    }
  }

  onWriteEnded(listener: () => void): () => void {
    this.writeEndedListeners.add(listener);
    return () => this.writeEndedListeners.delete(listener);
  }

  private writeEnded(): void {
    for (const listener of this.writeEndedListeners) listener();
  }

  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    return this.signals.listen(channel, onNotify);
  }

  async notify(channel: string, payload: string): Promise<void> {
    try {
      await this.signals.notify(channel, payload);
    } finally {
      this.writeEnded();
    }
  }

  async close(): Promise<void> {
    await this.signals.close();
    await this.pool.end();
  }
}

/** node-postgres prepares a named statement on a connection's first use and reuses it after. */
function queryConfig(statement: Statement, values?: unknown[]): pg.QueryConfig {
  return typeof statement === 'string' ? { text: statement, values } : { name: statement.name, text: statement.text, values };
}
