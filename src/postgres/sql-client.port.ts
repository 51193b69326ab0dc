/**
 * The smallest SQL surface the Postgres adapters need (event store, read models), implemented
 * over node-postgres (`pg-sql-client.ts`) and over PGlite (`pglite-sql-client.ts`). Adapters
 * write one SQL dialect and never learn which of the two runs it.
 */

export interface SqlQueryable {
  /** One statement; `$1`-style parameters. Column types follow the driver (int8 may be a string). */
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}

export interface TransactionOptions {
  /**
   * Commit without waiting for the WAL flush (`synchronous_commit = off` for this transaction):
   * for writes that can be derived again from the log, where a crash may lose the last moments
   * but never leaves them half applied. Set in the same round trip as BEGIN.
   */
  asynchronousCommit?: boolean;
}

export interface SqlClient extends SqlQueryable {
  /**
   * True when the database runs in this process, one statement at a time (PGlite): every read
   * competes with all other work, so readers should batch rather than read early.
   */
  readonly inProcess?: boolean;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: SqlQueryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
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
  close(): Promise<void>;
}

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
