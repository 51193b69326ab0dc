import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type LeaseGrant, LeaseLostError, type LeaseStore } from '../core/lease.port.js';
import { ensureTables } from './checkpoint-store.js';
import {
  reusable,
  sqlErrorInfo,
  type SessionLocks,
  type SqlClient,
  type SqlTransaction,
  type Statement,
  statementText,
  type TransactionOptions,
} from './sql-client.port.js';

/** Ids of this process's holders start with it: host, pid and a random part (pids repeat across restarts). */
const THIS_PROCESS = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}/`;
let holders = 0;

/** A new holder id of this process (one per contender, so two contenders in one process are two holders). */
export function newHolderId(): string {
  holders += 1;
  return `${THIS_PROCESS}${holders}`;
}

/**
 * Leases in the read-model database, one row per (role, shard) in `flostra_leases`, on
 * node-postgres and PGlite alike. Expiry is compared with the database's `now()`, so the
 * processes' clocks never need to agree. The row is never deleted: its epoch only grows. A
 * database that only this process opens (PGlite) also counts a lease of an earlier process as
 * free: that process is gone, and a restart need not wait for its lease to expire.
 */
export class SqlLeases implements LeaseStore {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<SqlLeases> {
    await ensureTables(sql, [
      `create table if not exists flostra_leases (
        role text not null,
        shard text not null,
        holder text not null,
        epoch bigint not null,
        expires_at timestamptz not null,
        acquired_at timestamptz not null,
        primary key (role, shard)
      )`,
      FENCE_FUNCTION,
    ]);
    return new SqlLeases(sql);
  }

  async tryAcquire(role: string, shard: string, holder: string, ttlMs: number): Promise<LeaseGrant | null> {
    const { rows } = await this.sql.query<{ epoch: string | number }>(
      reusable(`insert into flostra_leases as l (role, shard, holder, epoch, expires_at, acquired_at)
       values ($1, $2, $3, 1, now() + $4 * interval '1 millisecond', now())
       on conflict (role, shard) do update
         set holder = excluded.holder, epoch = l.epoch + 1, expires_at = excluded.expires_at, acquired_at = now()
         where l.expires_at <= now() or ($5 and not starts_with(l.holder, $6))
       returning epoch`),
      [role, shard, holder, ttlMs, this.sql.inProcess === true, THIS_PROCESS],
    );
    const row = rows[0];
    return row === undefined ? null : { role, shard, holder, epoch: Number(row.epoch) };
  }

  async renew(grant: LeaseGrant, ttlMs: number): Promise<boolean> {
    const { rows } = await this.sql.query(
      reusable(`update flostra_leases set expires_at = now() + $4 * interval '1 millisecond'
       where role = $1 and shard = $2 and epoch = $3 returning epoch`),
      [grant.role, grant.shard, grant.epoch, ttlMs],
    );
    return rows.length > 0;
  }

  async release(grant: LeaseGrant): Promise<void> {
    await this.sql.query('update flostra_leases set expires_at = now() where role = $1 and shard = $2 and epoch = $3', [
      grant.role,
      grant.shard,
      grant.epoch,
    ]);
  }

  /** Every lease (operations and tests). */
  async list(): Promise<{ role: string; shard: string; holder: string; epoch: number; expired: boolean }[]> {
    const { rows } = await this.sql.query<{ role: string; shard: string; holder: string; epoch: string | number; expired: boolean }>(
      'select role, shard, holder, epoch, expires_at <= now() as expired from flostra_leases order by role, shard',
    );
    return rows.map((row) => ({ ...row, epoch: Number(row.epoch) }));
  }

  /**
   * `sql` whose writes are conditioned on `grant`: each write runs in a transaction that first
   * share-locks the lease row and checks its epoch. A newer epoch refuses the write
   * (LeaseLostError, nothing written) and calls `onLost`. The share lock keeps a new holder from
   * taking the lease while such a transaction is open, so a write can never land after a
   * takeover; and a server-side idle timeout of one TTL ends a transaction whose process was
   * paused in the middle of it, so a paused holder cannot block a takeover for longer.
   */
  fenced(sql: SqlClient, grant: LeaseGrant, ttlMs: number, onLost: () => void): SqlClient {
    return new FencedSqlClient(sql, grant, ttlMs, onLost);
  }
}

const READ = /^\s*select\b/i;

/** SQLSTATE the fence raises when the lease moved past the grant's epoch. */
const FENCE_REFUSED = 'FLL01';

/**
 * The fence of a write transaction as one statement, so that it can travel with the writes it
 * guards instead of a round trip ahead of them: share-locks the lease row, refuses (FENCE_REFUSED)
 * unless it still has the grant's epoch, and sets the transaction's idle timeout. Created once;
 * two processes creating it at once collide in the catalog (23505), which ensureTables allows.
 * A change to its body needs a new name.
 */
const FENCE_FUNCTION = `do $do$ begin
  if to_regprocedure('flostra_lease_fence_v1(text, text, bigint, text)') is null then
    create function flostra_lease_fence_v1(p_role text, p_shard text, p_epoch bigint, p_idle_timeout text) returns void
    language plpgsql as $fn$
    declare
      current_epoch bigint;
    begin
      if p_idle_timeout is not null then
        perform set_config('idle_in_transaction_session_timeout', p_idle_timeout, true);
      end if;
      select l.epoch into current_epoch from flostra_leases l where l.role = p_role and l.shard = p_shard for share;
      if current_epoch is distinct from p_epoch then
        raise exception 'the % lease of % moved past epoch %', p_role, p_shard, p_epoch using errcode = '${FENCE_REFUSED}';
      end if;
    end
    $fn$;
  end if;
end $do$`;

const FENCE_SQL = reusable('select flostra_lease_fence_v1($1, $2, $3, $4)');

class FencedSqlClient implements SqlClient {
  readonly inProcess?: boolean;
  readonly onWriteEnded?: SqlClient['onWriteEnded'];
  readonly startBackgroundNow?: SqlClient['startBackgroundNow'];

  constructor(
    private readonly sql: SqlClient,
    private readonly grant: LeaseGrant,
    private readonly ttlMs: number,
    private readonly onLost: () => void,
  ) {
    this.inProcess = sql.inProcess;
    if (sql.onWriteEnded) this.onWriteEnded = (listener) => sql.onWriteEnded!(listener);
    if (sql.startBackgroundNow) this.startBackgroundNow = () => sql.startBackgroundNow!();
  }

  /** Reads go straight through; a write goes in a fenced transaction of its own. */
  query<T>(statement: Statement, params?: unknown[]): Promise<{ rows: T[] }> {
    if (READ.test(statementText(statement))) return this.sql.query<T>(statement, params);
    return this.transaction((tx) => tx.query<T>(statement, params));
  }

  /**
   * The fence goes first, queued: it leaves with the transaction's first statements (and, for a
   * transaction that only queues writes, with its COMMIT), so fencing costs no round trip of its
   * own. Should it refuse, every statement after it fails and the transaction rolls back: `fn`
   * never sees a row read past a lost lease, and nothing it wrote commits.
   */
  async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options?: TransactionOptions): Promise<T> {
    const { role, shard, epoch } = this.grant;
    try {
      return await this.sql.transaction((tx) => {
        tx.queue(FENCE_SQL, [role, shard, epoch, this.sql.inProcess === true ? null : String(this.ttlMs)]);
        return fn(tx);
      }, options);
    } catch (error) {
      if (sqlErrorInfo(error).code !== FENCE_REFUSED) throw error;
      this.onLost();
      throw new LeaseLostError(this.grant);
    }
  }

  sessionLocks(): SessionLocks {
    return this.sql.sessionLocks();
  }

  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    return this.sql.listen(channel, onNotify);
  }

  notify(channel: string, payload: string): Promise<void> {
    return this.sql.notify(channel, payload);
  }

  /** The client belongs to whoever made it. */
  async close(): Promise<void> {}
}
