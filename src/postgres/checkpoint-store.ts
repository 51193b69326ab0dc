import type { Checkpoints } from '../core/checkpointed-subscription.js';
import type { Position } from '../core/event-store.port.js';
import { reusable, sqlErrorInfo, write, type SqlClient, type SqlQueryable, type SqlTransaction } from './sql-client.port.js';

/**
 * Runs `create ... if not exists` statements one by one. Two processes creating the same table
 * at once can still collide in the catalog (unique_violation, duplicate_table, or duplicate_object
 * for the table's row type): the other one won, which is all we wanted.
 */
export async function ensureTables(sql: SqlClient, statements: readonly string[]): Promise<void> {
  for (const statement of statements) {
    try {
      await sql.query(statement);
    } catch (error) {
      const { code } = sqlErrorInfo(error);
      if (code !== '23505' && code !== '42P07' && code !== '42710') throw error;
    }
  }
}

const SAVE_SQL = reusable(`insert into subscription_checkpoints (name, position) values ($1, $2)
  on conflict (name) do update set position = excluded.position, updated_at = now()`);

/**
 * Where each checkpointed subscription (dispatcher, watchdog, ...) stopped reading the global
 * log: one row per subscription name, the position as the store's opaque string.
 */
export class CheckpointStore implements Checkpoints {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<CheckpointStore> {
    await ensureTables(sql, [
      `create table if not exists subscription_checkpoints (
        name text primary key,
        position text not null,
        updated_at timestamptz not null default now()
      )`,
    ]);
    return new CheckpointStore(sql);
  }

  /** The stored position, or null when the subscription never stored one (read from the start). */
  async load(name: string, q: SqlQueryable = this.sql): Promise<Position | null> {
    const { rows } = await q.query<{ position: string }>('select position from subscription_checkpoints where name = $1', [name]);
    return rows[0]?.position ?? null;
  }

  /**
   * Pass the caller's transaction as `q` to commit the checkpoint with the work it covers: the
   * write is queued there (it travels with the COMMIT, and a failure fails the transaction).
   */
  async save(name: string, position: Position, q: SqlQueryable | SqlTransaction = this.sql): Promise<void> {
    await write(q, SAVE_SQL, [name, position]);
  }
}

// The subscription itself knows no Postgres: it lives in src/core beside the runner that uses it.
export {
  type CheckpointedSubscriptionOptions,
  CheckpointThrottle,
  type RunningSubscription,
  startCheckpointedSubscription,
} from '../core/checkpointed-subscription.js';
