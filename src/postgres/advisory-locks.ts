import type pg from 'pg';
import type { SessionLock, SessionLocks } from './sql-client.port.js';

/**
 * Session locks on node-postgres: session advisory locks on one dedicated connection, so a
 * crashed process frees its locks with its connection.
 */
interface Session {
  client: Promise<pg.PoolClient>;
  lost: AbortController;
  queue: Promise<void>;
}

export class AdvisoryLocks implements SessionLocks {
  private session: Session | null = null;

  constructor(private readonly pool: pg.Pool) {}

  async tryAcquire(key: string): Promise<SessionLock | null> {
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
    session.queue = result.then(
      () => undefined,
      () => undefined,
    );
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
          lost.abort(new Error('the session-lock connection was lost'));
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
