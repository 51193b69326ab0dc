import type pg from 'pg';
import { PgSqlClient } from '../postgres/pg-sql-client.js';
import type { SqlClient } from '../postgres/sql-client.port.js';

/** The right to run one version of one projection: held by at most one runner anywhere. */
export interface ProjectorLock {
  /** Aborts when the lock may have been lost (its connection died): the runner must stop. */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

export interface ProjectorLocks {
  /** The lock, or null when someone else holds it. */
  tryAcquire(key: string): Promise<ProjectorLock | null>;
  close(): Promise<void>;
}

/**
 * Locks of one projector instance. On node-postgres: session advisory locks on one dedicated
 * connection, so a crashed process frees its locks with its connection. On PGlite (one process
 * owns the database) a registry per database is enough.
 */
export function projectorLocks(sql: SqlClient): ProjectorLocks {
  return sql instanceof PgSqlClient ? new AdvisoryLocks(sql.pool) : new InProcessLocks(sql);
}

const heldInProcess = new WeakMap<SqlClient, Set<string>>();

class InProcessLocks implements ProjectorLocks {
  private readonly mine = new Set<string>();

  constructor(private readonly sql: SqlClient) {}

  async tryAcquire(key: string): Promise<ProjectorLock | null> {
    let held = heldInProcess.get(this.sql);
    if (held === undefined) heldInProcess.set(this.sql, (held = new Set()));
    if (held.has(key)) return null;
    held.add(key);
    this.mine.add(key);
    const lost = new AbortController();
    return {
      lost: lost.signal,
      release: async () => {
        if (this.mine.delete(key)) held.delete(key);
      },
    };
  }

  async close(): Promise<void> {
    const held = heldInProcess.get(this.sql);
    for (const key of this.mine) held?.delete(key);
    this.mine.clear();
  }
}

interface Session {
  client: Promise<pg.PoolClient>;
  lost: AbortController;
  queue: Promise<void>;
}

class AdvisoryLocks implements ProjectorLocks {
  private session: Session | null = null;

  constructor(private readonly pool: pg.Pool) {}

  async tryAcquire(key: string): Promise<ProjectorLock | null> {
    const session = this.connect();
    const { rows } = await this.query<{ ok: boolean }>(session, 'select pg_try_advisory_lock(hashtextextended($1, 0)) as ok', [key]);
    if (rows[0]?.ok !== true) return null;
    let held = true;
    return {
      lost: session.lost.signal,
      release: async () => {
        if (!held || session.lost.signal.aborted) return;
        held = false;
        await this.query(session, 'select pg_advisory_unlock(hashtextextended($1, 0))', [key]);
      },
    };
  }

  /** One statement at a time on the session: acquisitions and releases may be requested at once. */
  private query<T extends pg.QueryResultRow>(session: Session, text: string, params: unknown[]): Promise<pg.QueryResult<T>> {
    const result = session.queue.then(async () => (await session.client).query<T>(text, params));
    session.queue = result.then(() => undefined, () => undefined);
    return result;
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = null;
    if (session === null) return;
    const client = await session.client.catch(() => null);
    // Ending the session frees whatever it still holds.
    client?.release(true);
  }

  private connect(): Session {
    if (this.session !== null) return this.session;
    const lost = new AbortController();
    const session: Session = {
      lost,
      queue: Promise.resolve(),
      client: this.pool.connect().then((client) => {
        client.on('error', () => {
          // Postgres freed this session's locks with it: every runner holding one must stop.
          lost.abort(new Error('the projector lock connection was lost'));
          if (this.session === session) this.session = null;
          client.release(true);
        });
        return client;
      }),
    };
    session.client.catch(() => {
      if (this.session === session) this.session = null;
    });
    this.session = session;
    return session;
  }
}
