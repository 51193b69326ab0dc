/**
 * The smallest SQL surface the Postgres adapters need (event store, read models), implemented
 * over node-postgres (`pg-sql-client.ts`) and over PGlite (`pglite-sql-client.ts`). Adapters
 * write one SQL dialect and never learn which of the two runs it.
 */

import { createHash } from 'node:crypto';

/**
 * A statement the server may parse and plan once per connection, then run again from its
 * prepared form instead of parsing and planning it on every run. Only for statements
 * whose text is fixed and whose result columns are named: a `select *` over a view that a
 * projection switch replaces would change the result type under the prepared plan.
 */
export interface ReusableStatement {
  readonly text: string;
  /** Derived from the text, so one name never stands for two statements on a connection. */
  readonly name: string;
}

const known = new Map<string, ReusableStatement>();
const KNOWN_LIMIT = 1_000;

/** `text` as a reusable statement; cheap to call per use (remembered for up to 1,000 texts). */
export function reusable(text: string): ReusableStatement {
  let statement = known.get(text);
  if (statement !== undefined) return statement;
  statement = { text, name: `flostra_${createHash('sha256').update(text).digest('hex').slice(0, 32)}` };
  if (known.size < KNOWN_LIMIT) known.set(text, statement);
  return statement;
}

/** SQL text, or a reusable statement; an adapter without prepared statements runs its text. */
export type Statement = string | ReusableStatement;

export function statementText(statement: Statement): string {
  return typeof statement === 'string' ? statement : statement.text;
}

/** A statement and its parameters. */
export interface StatementCall {
  sql: Statement;
  params?: unknown[];
}

export interface SqlQueryable {
  /** One statement; `$1`-style parameters. Column types follow the driver (int8 may be a string). */
  query<T>(sql: Statement, params?: unknown[]): Promise<{ rows: T[] }>;
}

/**
 * Inside a transaction. Statements go out in the order they are called, and a server-backed
 * client sends them without waiting for the ones before to answer: statements started together
 * (several `query` calls before the first is awaited, or a `query` after `queue`) share one
 * round trip, and so do BEGIN and the first of them.
 */
export interface SqlTransaction extends SqlQueryable {
  /**
   * Sends a write whose rows nobody reads, without waiting for its answer: it travels with
   * whatever is sent next, at the latest the COMMIT, so a transaction's last writes and its
   * commit share one round trip. If it fails, the whole transaction rolls back and
   * `transaction()` rejects with its error.
   */
  queue(sql: Statement, params?: unknown[]): void;
}

/**
 * A write whose rows nobody reads: queued when `q` is a transaction (it travels with whatever the
 * transaction sends next, at the latest its COMMIT, and its failure fails the transaction), sent
 * and awaited otherwise.
 */
export async function write(q: SqlQueryable | SqlTransaction, sql: Statement, params?: unknown[]): Promise<void> {
  if ('queue' in q) q.queue(sql, params);
  else await q.query(sql, params);
}

export interface TransactionOptions {
  /**
   * Commit without waiting for the WAL flush (`synchronous_commit = off` for this transaction):
   * for writes that can be derived again from the log, where a crash may lose the last moments
   * but never leaves them half applied. Set in the same round trip as BEGIN.
   */
  asynchronousCommit?: boolean;
  /**
   * Work that can wait, such as a read model's batch nobody is waiting for: a database that runs
   * one statement at a time in this process may hold its BEGIN back until nothing else waits
   * for the database (bounded, so it never starves), and the batch then carries more. Clients
   * of a server ignore it.
   */
  background?: boolean;
}

export interface SqlClient extends SqlQueryable {
  /**
   * True when the database runs in this process, one statement at a time (PGlite): every read
   * competes with all other work, so readers should batch rather than read early. Such a
   * database belongs to this process alone: nobody else could keep its read models.
   */
  readonly inProcess?: boolean;
  /**
   * Named locks held for as long as this process keeps them (or its connection lives): at most
   * one holder of a name across every process on the database.
   */
  sessionLocks(): SessionLocks;
  /**
   * Runs `fn` in one transaction: committed when it resolves and every statement it sent
   * succeeded, rolled back when it throws or one of them failed.
   */
  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Sends two statements on one connection in one write, each its own implicit transaction:
   * `then` runs once `first` has committed, so it sees what `first` wrote, without a round trip
   * of its own. Each answer settles on its own, `first`'s as soon as it arrives, and a failure of
   * one does not fail the other. Optional: a database in this process has no round trip to save.
   */
  queryThen?<A, B>(first: StatementCall, then: StatementCall): { first: Promise<{ rows: A[] }>; then: Promise<{ rows: B[] }> };
  /**
   * Calls `onNotify` for every NOTIFY on `channel` until the returned function is awaited.
   * Notifications can be lost (a reconnect); after one, `onNotify('')` is called once so the
   * listener re-reads what it may have missed.
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Sends a NOTIFY outside any caller's transaction. Wake-ups need no durability, so
   * implementations may send it without waiting for a WAL flush.
   */
  notify(channel: string, payload: string): Promise<void>;
  /**
   * Calls `listener` each time a transaction or a NOTIFY of this client ends, until the
   * returned function is called. Any open write holds back the readable end of the event log
   * (readers see events below the snapshot's xmin), so the store reads it again at once when
   * one of this process's own writes ends instead of guessing with a timer. Single statements
   * are not reported: appends wake the store themselves, and the rest are brief. Optional: a
   * client whose writes never overlap (PGlite) has nothing to tell.
   */
  onWriteEnded?(listener: () => void): () => void;
  /**
   * Begins every background transaction held back so far (see TransactionOptions.background)
   * without waiting for the database to be free: a reader waits for one of them. Optional: only
   * a client that holds them back has any.
   */
  startBackgroundNow?(): void;
  close(): Promise<void>;
}

/** A lock of `SessionLocks`: held until released, or until its session is lost. */
export interface SessionLock {
  /** Aborts when the lock may have been lost (its connection died): the holder must stop. */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

export interface SessionLocks {
  /** The lock, or null when someone else holds it. */
  tryAcquire(key: string): Promise<SessionLock | null>;
  /** Releases every lock this instance holds. */
  close(): Promise<void>;
}

/**
 * The Postgres that holds read models, checkpoints and other process state (DATABASE_URL; in
 * embedded mode the same PGlite as the event store): the injection token of its SqlClient.
 */
export const READ_MODEL_SQL = Symbol('ReadModelSql');

/** SQLSTATE of a statement sent after an earlier one of its transaction failed. */
export const IN_FAILED_TRANSACTION = '25P02';

/** The SQLSTATE and constraint of a failed statement, whichever driver raised it. */
export function sqlErrorInfo(error: unknown): { code?: string; constraint?: string } {
  if (typeof error !== 'object' || error === null) return {};
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  return {
    code: typeof code === 'string' ? code : undefined,
    constraint: typeof constraint === 'string' ? constraint : undefined,
  };
}

/** Quotes an identifier (a LISTEN channel) the way Postgres reads it back verbatim. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
