import pg from 'pg';
import { AdvisoryLocks } from './advisory-locks.js';
import { asUnavailable } from './connection-failure.js';
import { PgSignalConnection } from './pg-signal-connection.js';
import {
  IN_FAILED_TRANSACTION,
  sqlErrorInfo,
  type SessionLocks,
  type SqlClient,
  type SqlTransaction,
  type Statement,
  type StatementCall,
  type TransactionOptions,
} from './sql-client.port.js';

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

  /**
   * A pooled connection for the caller alone. The pool listens for errors only on idle
   * connections: one that dies while checked out (Postgres restarted under a transaction) emits
   * an 'error' event that, with no listener, ends the process. Its queries are rejected anyway,
   * and release(error) destroys it, so the listener here only keeps the process alive; it is
   * removed once the connection goes back to the pool.
   */
  private async checkout(): Promise<PipelinedClient> {
    const client = (await this.pool.connect()) as PipelinedClient;
    const ignore = () => undefined;
    client.on('error', ignore);
    const release = client.release.bind(client);
    client.release = (error?: Error | boolean) => {
      client.removeListener('error', ignore);
      release(error);
    };
    return client;
  }

  sessionLocks(): SessionLocks {
    return new AdvisoryLocks(this.pool);
  }

  /** A connection failure rejects with DependencyUnavailableError (503), as in `transaction`. */
  async query<T>(sql: Statement, params?: unknown[]): Promise<{ rows: T[] }> {
    try {
      const result = await this.pool.query(queryConfig(sql, params));
      return { rows: result.rows as T[] };
    } catch (error) {
      throw asUnavailable(error);
    }
  }

  /**
   * Both statements are written together on one pooled connection in pipeline mode; each is its
   * own extended-protocol query with its own Sync, so the server commits `first` before it runs
   * `then`, and an error in one leaves the other to run. The connection goes back to the pool
   * once both answered (destroyed, as `pool.query` does, if either failed).
   */
  queryThen<A, B>(first: StatementCall, then: StatementCall): { first: Promise<{ rows: A[] }>; then: Promise<{ rows: B[] }> } {
    const sent = this.checkout().then((client) => {
      client.pipeline = true;
      writeTogether(client);
      const answers = [client.query(queryConfig(first.sql, first.params)), client.query(queryConfig(then.sql, then.params))] as const;
      void Promise.allSettled(answers).then(([a, b]) => {
        const failure = a.status === 'rejected' ? a.reason : b.status === 'rejected' ? b.reason : undefined;
        client.pipeline = false;
        client.release(failure === undefined ? undefined : failure instanceof Error ? failure : new Error(String(failure)));
      });
      return answers;
    });
    const answer = async <R>(index: 0 | 1): Promise<{ rows: R[] }> => {
      try {
        const result = await (await sent)[index];
        return { rows: result.rows as R[] };
      } catch (error) {
        throw asUnavailable(error);
      }
    };
    return { first: answer<A>(0), then: answer<B>(1) };
  }

  /**
   * The connection runs in node-postgres's pipeline mode for the transaction: each statement is
   * written at once, without waiting for the answers before it, and the statements started in
   * one turn of the event loop leave in one write. BEGIN travels with the first statements and
   * COMMIT with the queued last ones, so a read-then-write transaction takes two round trips.
   */
  async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    try {
      return await this.pipelinedTransaction(fn, options);
    } catch (error) {
      throw asUnavailable(error);
    }
  }

  private async pipelinedTransaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options: TransactionOptions): Promise<T> {
    const client = await this.checkout();
    client.pipeline = true;
    // Every statement sent, as a promise that never rejects; answers come in the order sent, so
    // the first failure recorded is the cause and any later one only "transaction aborted".
    const answered: Promise<void>[] = [];
    let failed: { error: unknown } | undefined;
    const send = (sql: Statement, params?: unknown[]) => {
      writeTogether(client);
      const result = client.query(queryConfig(sql, params));
      answered.push(
        result.then(
          () => undefined,
          (error: unknown) => void (failed ??= { error }),
        ),
      );
      return result;
    };
    const tx: SqlTransaction = {
      query: async <R>(sql: Statement, params?: unknown[]) => ({ rows: (await send(sql, params)).rows as R[] }),
      queue: (sql: Statement, params?: unknown[]) => void send(sql, params),
    };
    try {
      // One simple-protocol query carries both statements.
      void send(options.asynchronousCommit === true ? 'begin; set local synchronous_commit = off' : 'begin');
      const result = await fn(tx);
      void send('commit');
      await Promise.all(answered);
      // A COMMIT after a failed statement answers ROLLBACK rather than failing: the failure is the answer.
      if (failed !== undefined) throw failed.error;
      client.pipeline = false;
      client.release();
      return result;
    } catch (error) {
      await Promise.all(answered);
      try {
        await client.query('rollback');
        client.pipeline = false;
        client.release();
      } catch (rollbackError) {
        // The connection is in an unknown state: destroy it rather than hand it to the next caller.
        client.release(rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError)));
      }
      // A statement refused because an earlier queued one failed reports that earlier failure.
      throw failed !== undefined && (error === failed.error || sqlErrorInfo(error).code === IN_FAILED_TRANSACTION) ? failed.error : error;
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

/** What pipelining uses of node-postgres's client (pg 8.23; not in its type definitions). */
type PipelinedClient = pg.PoolClient & {
  pipeline: boolean;
  connection?: { stream?: { cork?: () => void; uncork?: () => void } };
};

const corked = new WeakSet<PipelinedClient>();

/**
 * Holds the connection's writes until the current turn of the event loop ends, so statements
 * started together leave in one write (one system call, one packet) instead of one each.
 */
function writeTogether(client: PipelinedClient): void {
  const stream = client.connection?.stream;
  if (stream?.cork === undefined || stream.uncork === undefined || corked.has(client)) return;
  stream.cork();
  corked.add(client);
  process.nextTick(() => {
    corked.delete(client);
    stream.uncork();
  });
}

/** node-postgres prepares a named statement on a connection's first use and reuses it after. */
function queryConfig(statement: Statement, values?: unknown[]): pg.QueryConfig {
  return typeof statement === 'string' ? { text: statement, values } : { name: statement.name, text: statement.text, values };
}
