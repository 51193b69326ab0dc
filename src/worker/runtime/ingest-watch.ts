import type { Bus, PartitionOffsets } from '../../core/bus.port.js';
import type { Logger } from '../../core/logger.js';

export interface IngestWatchOptions {
  bus: Bus;
  /** The results topic. */
  topic: string;
  /** The ingestor's consumer group. */
  groupId: string;
  /** How often to look while someone waits. */
  periodMs: number;
  logger: Logger;
}

interface Waiter {
  onHandled: () => void;
  cancelled: boolean;
}

interface Mark {
  /** The topic's end offsets, taken after every waiter below had its result acknowledged. */
  ends: PartitionOffsets;
  waiters: Waiter[];
}

/**
 * Tells a worker when the control plane has handled the results it published, without asking
 * the control plane once per attempt. After an attempt's terminal result was acknowledged, the
 * worker keeps its lease alive until the ingestor has applied that result (see LeaseKeeper's
 * `linger`); one refused heartbeat per attempt used to be how it found out. Here one pair of
 * offset reads serves every attempt waiting in this process: the topic's end offsets, taken
 * after the results were acknowledged, bound them from above, and once the ingestor's group has
 * committed past those ends on every partition, it has handled all of them (applied, or refused
 * to the dead-letter topic with the reason). Bus failures only delay the answer: lingering
 * attempts heartbeat meanwhile, as before.
 */
export class IngestWatch {
  /** Registered since the last end offsets were taken. */
  private unmarked: Waiter[] = [];
  private marks: Mark[] = [];
  private timer: NodeJS.Timeout | null = null;
  private looking: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: IngestWatchOptions) {}

  /**
   * Calls `onHandled` once the ingestor has handled everything published to the topic before
   * this call; never, if the returned cancel function runs first or the watch stops.
   */
  whenHandled(onHandled: () => void): () => void {
    const waiter: Waiter = { onHandled, cancelled: false };
    if (!this.stopped) {
      this.unmarked.push(waiter);
      this.schedule();
    }
    return () => {
      waiter.cancelled = true;
    };
  }

  /** Looks once now: end offsets for the waiters registered so far, then the group's commits. */
  async look(): Promise<void> {
    if (this.looking !== null) return this.looking;
    this.looking = this.lookOnce().finally(() => {
      this.looking = null;
    });
    return this.looking;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.unmarked = [];
    this.marks = [];
  }

  /** Attempts waiting, for tests and diagnostics. */
  get waiting(): number {
    return [...this.unmarked, ...this.marks.flatMap((mark) => mark.waiters)].filter((waiter) => !waiter.cancelled).length;
  }

  private schedule(): void {
    if (this.timer !== null || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.look().finally(() => {
        if (this.waiting > 0) this.schedule();
      });
    }, this.options.periodMs);
    this.timer.unref();
  }

  private async lookOnce(): Promise<void> {
    const { bus, topic, groupId, logger } = this.options;
    this.prune();
    const waiters = this.unmarked;
    this.unmarked = [];
    try {
      if (waiters.length > 0) {
        try {
          this.marks.push({ ends: await bus.endOffsets(topic), waiters });
        } catch (error) {
          this.unmarked.unshift(...waiters);
          throw error;
        }
      }
      if (this.marks.length === 0) return;
      const committed = await bus.committedOffsets(groupId, topic);
      if (this.stopped) return;
      const open: Mark[] = [];
      for (const mark of this.marks) {
        if (!passed(committed, mark.ends)) {
          open.push(mark);
          continue;
        }
        for (const waiter of mark.waiters) if (!waiter.cancelled) waiter.onHandled();
      }
      this.marks = open;
    } catch (error) {
      // Lingering attempts go on heartbeating; the next look tries again.
      logger.debug('reading the ingestor progress failed', { topic, groupId, error: String(error) });
    }
  }

  /** Forgets waiters whose attempts stopped lingering by themselves, and marks left empty. */
  private prune(): void {
    this.unmarked = this.unmarked.filter((waiter) => !waiter.cancelled);
    this.marks = this.marks
      .map((mark) => ({ ends: mark.ends, waiters: mark.waiters.filter((waiter) => !waiter.cancelled) }))
      .filter((mark) => mark.waiters.length > 0);
  }
}

/** The group has committed at least up to `ends` on every partition. */
function passed(committed: PartitionOffsets, ends: PartitionOffsets): boolean {
  for (const [partition, end] of ends) {
    if ((committed.get(partition) ?? 0n) < end) return false;
  }
  return true;
}
