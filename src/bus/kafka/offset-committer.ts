import type { Consumer } from 'kafkajs';
import type { Logger } from '../../core/logger.js';

/**
 * Commits finished offsets in the background, one request at a time: targets that arrive while a
 * commit is in flight, or within `minIntervalMs` of its start, fold into the next one. Handlers
 * then go on to the next fetch at once instead of waiting a round trip to the group coordinator
 * per batch, and a busy consumer commits a few dozen times a second, not once per batch. A
 * commit that fails (a rebalance, a moved coordinator), or a crash before one, only means those
 * messages come again: at-least-once allows it, and consumers dedupe. `flush` commits at once.
 */
export class OffsetCommitter {
  private readonly targets = new Map<number, bigint>();
  private readonly committed = new Map<number, bigint>();
  private committing: Promise<void> | null = null;
  private again = false;
  private lastStartedAt = Number.NEGATIVE_INFINITY;
  /** Ends the wait for the interval early (flush). */
  private hurry: (() => void) | null = null;
  private flushing = false;

  constructor(
    private readonly consumer: Consumer,
    private readonly topic: string,
    private readonly log: Logger,
    private readonly minIntervalMs = 0,
  ) {}

  /** `offset` is the next one to read: every message before it in `partition` has finished. */
  advance(partition: number, offset: bigint): void {
    if (offset > (this.targets.get(partition) ?? -1n)) this.targets.set(partition, offset);
    if (this.committing !== null) {
      this.again = true;
      return;
    }
    const run = this.commitLoop();
    this.committing = run;
    // Cleared once settled, not inside: a loop with nothing to commit ends before it is stored.
    void run.finally(() => {
      if (this.committing === run) this.committing = null;
    });
  }

  /** Resolves once every target given so far was committed (or its commit failed). */
  async flush(): Promise<void> {
    this.flushing = true;
    try {
      this.hurry?.();
      while (this.committing !== null) await this.committing;
    } finally {
      this.flushing = false;
    }
  }

  private async commitLoop(): Promise<void> {
    do {
      await this.spaceOut();
      this.again = false;
      const due = [...this.targets].filter(([partition, offset]) => offset > (this.committed.get(partition) ?? -1n));
      if (due.length === 0) return;
      this.lastStartedAt = performance.now();
      try {
        await this.consumer.commitOffsets(due.map(([partition, offset]) => ({ topic: this.topic, partition, offset: offset.toString() })));
        for (const [partition, offset] of due) {
          if (offset > (this.committed.get(partition) ?? -1n)) this.committed.set(partition, offset);
        }
      } catch (error) {
        this.log.warn('committing finished offsets failed; those messages may come again', { error: String(error) });
        return;
      }
    } while (this.again);
  }

  /** Waits until `minIntervalMs` has passed since the last commit started, unless flushing. */
  private async spaceOut(): Promise<void> {
    const wait = this.lastStartedAt + this.minIntervalMs - performance.now();
    if (wait <= 0 || this.flushing) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => done(), wait);
      const done = () => {
        clearTimeout(timer);
        this.hurry = null;
        resolve();
      };
      this.hurry = done;
    });
  }
}
