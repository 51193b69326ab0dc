import { setTimeout as sleep } from 'node:timers/promises';
import type { EventStore, Position, RecordedEvent } from '../core/event-store.port.js';
import { gatherBatches } from '../core/gather-batches.js';
import type { Logger } from '../core/logger.js';
import { reusable, sqlErrorInfo, type SqlClient, type SqlQueryable, type SqlTransaction } from './sql-client.port.js';

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
export class CheckpointStore {
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
    if ('queue' in q) q.queue(SAVE_SQL, [name, position]);
    else await q.query(SAVE_SQL, [name, position]);
  }
}

export interface CheckpointedSubscriptionOptions {
  name: string;
  store: EventStore;
  checkpoints: CheckpointStore;
  streamPrefixes?: string[];
  batchSize?: number;
  /**
   * While batches stream in, how long a short one waits for more to join it (see
   * gatherBatches); default 0, for a subscriber on the critical path. Background subscribers
   * trade that much lag for fewer transactions.
   */
  gatherMs?: number;
  /**
   * Handles one batch and stores its checkpoint: when and with what (after a broker ack, in
   * the transaction of its writes) is the handler's promise to keep. A rejection restarts the
   * subscription from the stored checkpoint, so the batch is seen again.
   */
  handle(batch: RecordedEvent[]): Promise<void>;
  /**
   * Called on every (re)start, once the checkpoint is loaded and before the first batch after it:
   * a handler that keeps state beside the checkpoint reloads it here, knowing it covers at least
   * everything the checkpoint does. A rejection is a failure like any other (backoff, restart).
   */
  onResume?(after: Position | null): Promise<void>;
  logger: Logger;
  /** Backoff before resuming after a failure. */
  retry?: { initialMs: number; maxMs: number };
}

export interface RunningSubscription {
  /** Stops reading; resolves once the batch in hand (if any) was handled. */
  stop(): Promise<void>;
}

/**
 * A catch-up subscription that survives failures: it reads from the stored checkpoint, and
 * after any error (store, broker, handler) waits with a bounded backoff and reads again from
 * the checkpoint. Nothing after the checkpoint is ever skipped; some batches may be seen twice.
 */
export function startCheckpointedSubscription(options: CheckpointedSubscriptionOptions): RunningSubscription {
  const controller = new AbortController();
  const { signal } = controller;
  const retry = options.retry ?? { initialMs: 100, maxMs: 5_000 };
  const done = (async () => {
    let failures = 0;
    while (!signal.aborted) {
      try {
        const after = await options.checkpoints.load(options.name);
        await options.onResume?.(after);
        const { streamPrefixes, batchSize } = options;
        const batches = gatherBatches((reading) => options.store.subscribeToAll({ after, streamPrefixes, batchSize, signal: reading }), {
          windowMs: options.gatherMs ?? 0,
          maxCount: batchSize ?? 500,
          signal,
        });
        for await (const batch of batches) {
          await options.handle(batch);
          failures = 0;
        }
      } catch (error) {
        if (signal.aborted) break;
        failures += 1;
        const delayMs = Math.min(retry.maxMs, retry.initialMs * 2 ** (failures - 1));
        options.logger.warn('subscription failed; resuming from its checkpoint', {
          subscription: options.name,
          err: error,
          retryInMs: delayMs,
        });
        await sleep(delayMs, undefined, { signal }).catch(() => undefined);
      }
    }
  })();
  return {
    async stop() {
      controller.abort();
      await done;
    },
  };
}

/**
 * Decides when a batch that changed nothing still moves the stored checkpoint: at most once per
 * interval, and a skipped position is stored later by the owner's timer (`due`). Re-reading such
 * batches after a crash is harmless, and skipping their transaction saves a write per appended
 * event for subscribers that care about few event types.
 */
export class CheckpointThrottle {
  private lastSavedAt = Number.NEGATIVE_INFINITY;
  private pending: Position | null = null;

  constructor(
    private readonly intervalMs = 1_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether to store `position` now; when not, it is kept for `due`. */
  shouldSave(batchChangedSomething: boolean, position: Position): boolean {
    const now = this.now();
    if (!batchChangedSomething && now - this.lastSavedAt < this.intervalMs) {
      this.pending = position;
      return false;
    }
    this.lastSavedAt = now;
    this.pending = null;
    return true;
  }

  /** A skipped position whose interval has passed: store it now (then it is no longer pending). */
  due(): Position | null {
    if (this.pending === null || this.now() - this.lastSavedAt < this.intervalMs) return null;
    const position = this.pending;
    this.pending = null;
    this.lastSavedAt = this.now();
    return position;
  }
}
