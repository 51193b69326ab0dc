import {
  type CheckpointThrottle,
  type Checkpoints,
  type RunningSubscription,
  startCheckpointedSubscription,
} from './checkpointed-subscription.js';
import type { EventStore, Position, RecordedEvent } from './event-store.port.js';
import { type LeaseTime, realLeaseTime } from './leadership.js';
import type { Logger } from './logger.js';

/** What the loop sleeps by: milliseconds and a sleep that ends early on its signal (a test moves both by hand). */
export type RunnerTime = LeaseTime;

/** The log a runner follows, and what it does with each batch. */
export interface CatchUpFeed {
  /** The checkpoint's name, and the subscription's in logs. */
  name: string;
  store: Pick<EventStore, 'subscribeToAll'>;
  /** Where the position is kept; without it, every (re)start reads the log from its beginning. */
  checkpoints?: Checkpoints;
  streamPrefixes: string[];
  batchSize?: number;
  /** How long a short batch waits for more to join it (see gatherBatches); default 0. */
  gatherMs?: number;
  /** Reloads state kept beside the checkpoint, before the first batch after each (re)start. */
  onResume?(after: Position | null): Promise<void>;
  /** Applies one batch and stores its checkpoint (or leaves a skipped position to `throttle`). */
  handle(batch: readonly RecordedEvent[]): Promise<void> | void;
  /** The handler's throttle: a position it skipped is stored by the loop once due, never during a batch. */
  throttle?: CheckpointThrottle;
}

/** The owner's work between sleeps. */
export interface DueLoop {
  /** One round, given the stop signal; resolves to how long to sleep before the next (0: at once). */
  round(signal: AbortSignal): Promise<number>;
  /** A round failed (`failures` in a row): the loop backs off, without waking early, and tries again. */
  onError(error: unknown, failures: number): void;
  /** First retry after `initialMs`, doubling up to `maxMs`; default 200 ms to 5 s. */
  backoff?: { initialMs: number; maxMs: number };
}

export interface CatchUpRunnerOptions {
  feed: CatchUpFeed;
  loop: DueLoop;
  logger: Logger;
  /** Default: monotonic time and real sleeps. An owner whose due times come from its clock passes that clock's `now`. */
  time?: RunnerTime;
}

/**
 * The start/stop skeleton of a role that keeps a table (or memory) from the log and acts on it
 * when things fall due: a checkpointed catch-up subscription feeds the owner's handler in
 * batches, and a loop runs the owner's rounds, sleeping between them as long as each round asks
 * unless `wake` calls it sooner. The owner keeps every decision (what a batch changes, what is
 * due, how long to sleep); the runner keeps the order of things:
 *
 * - a wake-up is never lost: one that comes during a round shortens the sleep after it;
 * - a failed round backs off (not cut short by wake-ups) and the loop goes on;
 * - a checkpoint position the handler skipped (`feed.throttle`) is stored at the start of a
 *   round, never while a batch is in hand, so it cannot land after a newer one;
 * - `stop` ends the subscription and the loop and resolves once the batch and round in hand are
 *   done. A leader starts a runner when it gains its lease and stops it when it loses it.
 */
export class CatchUpRunner {
  private readonly time: RunnerTime;
  private running: { abort: AbortController; subscription: RunningSubscription; loop: Promise<void> } | null = null;
  private sleeping: { untilMs: number; wake: () => void } | null = null;
  /** The earliest due time a wake-up asked for while the loop was not sleeping. */
  private wokenFor = Number.POSITIVE_INFINITY;
  private handling = false;
  private idleSave: Promise<void> | null = null;

  constructor(private readonly options: CatchUpRunnerOptions) {
    this.time = options.time ?? realLeaseTime;
  }

  get started(): boolean {
    return this.running !== null;
  }

  start(): void {
    if (this.running !== null) return;
    const { feed, logger } = this.options;
    const abort = new AbortController();
    const subscription = startCheckpointedSubscription({
      name: feed.name,
      store: feed.store,
      checkpoints: feed.checkpoints,
      streamPrefixes: feed.streamPrefixes,
      batchSize: feed.batchSize,
      gatherMs: feed.gatherMs,
      onResume: feed.onResume,
      handle: (batch) => this.handle(batch),
      logger,
    });
    this.running = { abort, subscription, loop: this.run(abort.signal) };
  }

  /** Stops reading and looping; resolves once the batch and the round in hand are done. */
  async stop(): Promise<void> {
    const running = this.running;
    this.running = null;
    if (running === null) return;
    running.abort.abort();
    await Promise.all([running.subscription.stop(), running.loop]);
  }

  /**
   * Runs the next round sooner: at once, or (given `dueMs`, in `time`'s milliseconds) when the
   * loop would otherwise sleep past it.
   */
  wake(dueMs = Number.NEGATIVE_INFINITY): void {
    if (this.sleeping === null) this.wokenFor = Math.min(this.wokenFor, dueMs);
    else if (dueMs < this.sleeping.untilMs) this.sleeping.wake();
  }

  private async handle(batch: readonly RecordedEvent[]): Promise<void> {
    this.handling = true;
    try {
      await this.idleSave?.catch(() => undefined);
      await this.options.feed.handle(batch);
    } finally {
      this.handling = false;
    }
  }

  /** Stores the position the handler skipped, unless a batch is in hand (it stores a newer one). */
  private async saveSkipped(): Promise<void> {
    const { throttle, checkpoints, name } = this.options.feed;
    if (this.handling || throttle === undefined || checkpoints === undefined) return;
    const position = throttle.due();
    if (position === null) return;
    this.idleSave = checkpoints.save(name, position).finally(() => (this.idleSave = null));
    await this.idleSave;
  }

  private async run(signal: AbortSignal): Promise<void> {
    const { loop } = this.options;
    const { initialMs, maxMs } = loop.backoff ?? { initialMs: 200, maxMs: 5_000 };
    let failures = 0;
    while (!signal.aborted) {
      this.wokenFor = Number.POSITIVE_INFINITY;
      let waitMs: number;
      let wakeable = true;
      try {
        await this.saveSkipped();
        waitMs = await loop.round(signal);
        failures = 0;
      } catch (error) {
        if (signal.aborted) return;
        failures += 1;
        loop.onError(error, failures);
        waitMs = Math.min(maxMs, initialMs * 2 ** (failures - 1));
        wakeable = false;
      }
      await this.sleep(waitMs, wakeable, signal);
    }
  }

  private async sleep(ms: number, wakeable: boolean, signal: AbortSignal): Promise<void> {
    const now = this.time.now();
    const untilMs = wakeable ? Math.min(now + ms, Math.max(now, this.wokenFor)) : now + ms;
    if (signal.aborted) return;
    // No sleep: the next round still lets what waits on the event loop (the feed, timers) run first.
    if (untilMs <= now) return new Promise((resolve) => setImmediate(resolve));
    const woken = new AbortController();
    if (wakeable) this.sleeping = { untilMs, wake: () => woken.abort() };
    try {
      await this.time.sleep(untilMs - now, AbortSignal.any([signal, woken.signal]));
    } finally {
      this.sleeping = null;
    }
  }
}
