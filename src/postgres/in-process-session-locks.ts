import type { SessionLock, SessionLocks, SqlClient } from './sql-client.port.js';

const heldInProcess = new WeakMap<SqlClient, Set<string>>();

/**
 * Session locks of a database that only this process opens (PGlite): a registry per database
 * is enough, and nothing can lose them but the process itself.
 */
export class InProcessSessionLocks implements SessionLocks {
  private readonly mine = new Set<string>();

  constructor(private readonly sql: SqlClient) {}

  async tryAcquire(key: string): Promise<SessionLock | null> {
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
