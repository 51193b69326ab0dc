import { setTimeout as sleep } from 'node:timers/promises';
import type { EventStore, Position, RecordedEvent } from './event-store.port.js';
import { gatherBatches } from './gather-batches.js';
import type { Logger } from './logger.js';

/**
 * Where each checkpointed subscription (dispatcher, watchdog, ...) stopped reading the global
 * log, by subscription name (the Postgres table is in src/postgres/checkpoint-store.ts).
 */
export interface Checkpoints {
  /** The stored position, or null when the subscription never stored one (read from the start). */
  load(name: string): Promise<Position | null>;
  save(name: string, position: Position): Promise<void>;
}

export interface CheckpointedSubscriptionOptions {
  name: string;
  store: Pick<EventStore, 'subscribeToAll'>;
  /** Where the position is kept; without it, every (re)start reads the log from its beginning. */
  checkpoints?: Checkpoints;
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
        const after = (await options.checkpoints?.load(options.name)) ?? null;
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
