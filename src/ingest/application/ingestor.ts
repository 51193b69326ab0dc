import { type Bus, type ConsumerHandle, INGESTOR_GROUP_ID, TOPICS } from '../../core/bus.port.js';
import type { Logger } from '../../core/logger.js';
import type { ResultIngestor } from './result-ingestor.js';

export interface IngestorOptions {
  groupId?: string;
  /** Partitions handled at once. */
  concurrency?: number;
  /** Partitions of the results topics when the ingestor has to create them. */
  partitions?: number;
  /** Backoff before a crashed consumer rejoins (its uncommitted messages come again). */
  restart?: { initialMs: number; maxMs: number };
}

/**
 * Keeps one consumer of `flostra.results.v1` running. A handler that rejects stops the consumer
 * without committing (the port's contract); the ingestor then rejoins after a backoff, so the
 * message that failed is delivered again rather than skipped.
 */
export class Ingestor {
  private readonly options: Required<IngestorOptions>;
  private consumer: ConsumerHandle | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  private crashes = 0;
  private running = false;

  constructor(
    private readonly deps: { bus: Bus; results: ResultIngestor; logger: Logger },
    options: IngestorOptions = {},
  ) {
    this.options = { groupId: INGESTOR_GROUP_ID, concurrency: 4, partitions: 12, restart: { initialMs: 200, maxMs: 10_000 }, ...options };
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.deps.bus.ensureTopics([
      { topic: TOPICS.results, partitions: this.options.partitions },
      { topic: TOPICS.resultsDlq, partitions: this.options.partitions },
    ]);
    await this.join();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const consumer = this.consumer;
    this.consumer = null;
    await consumer?.stop();
  }

  private async join(): Promise<void> {
    // `let`: a crash reported while consume() is still joining finds no handle yet, not a TDZ error.
    let consumer: ConsumerHandle | undefined;
    // eslint-disable-next-line prefer-const
    consumer = await this.deps.bus.consume({
      groupId: this.options.groupId,
      topic: TOPICS.results,
      concurrency: this.options.concurrency,
      // Whatever the bus fetched for a partition at once: one append per execution in it.
      handleBatch: async (messages) => {
        await this.deps.results.handleBatch(messages);
        this.crashes = 0;
      },
      onCrash: (error) => this.rejoinLater(consumer, error),
    });
    if (!this.running) {
      await consumer.stop();
      return;
    }
    this.consumer = consumer;
  }

  private rejoinLater(crashed: ConsumerHandle | undefined, error: unknown): void {
    if (!this.running) return;
    this.crashes += 1;
    const delayMs = Math.min(this.options.restart.maxMs, this.options.restart.initialMs * 2 ** (this.crashes - 1));
    this.deps.logger.error('results consumer stopped on an error; rejoining', { err: error, retryInMs: delayMs });
    if (this.consumer === crashed) this.consumer = null;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (!this.running) return;
      // The crashed consumer may still hold its group membership: leave before rejoining.
      (crashed ? crashed.stop() : Promise.resolve())
        .catch(() => undefined)
        .then(() => (this.running ? this.join() : undefined))
        .catch((joinError: unknown) => this.rejoinLater(undefined, joinError));
    }, delayMs);
  }
}
