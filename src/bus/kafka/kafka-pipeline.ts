import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { IncomingMessage } from '../../core/bus.port.js';
import type { Logger } from '../../core/logger.js';
import { Slots } from '../slots.js';
import { PartitionProgress } from '../partition-progress.js';
import type { OffsetCommitter } from './offset-committer.js';

export interface PipelineOptions {
  topic: string;
  maxInFlight: number;
  heartbeatIntervalMs: number;
  handle: (message: IncomingMessage) => Promise<void>;
  toIncoming: (topic: string, partition: number, message: KafkaMessage) => IncomingMessage;
  /** A handler rejected: the consumer must stop without committing past that message. */
  onFailure: (error: unknown) => void;
  /** The consumer's committer: finished offsets go to it. */
  committer: OffsetCommitter;
  log: Logger;
}

/**
 * Handles a consumer's messages with up to `maxInFlight` running at once, across partitions and
 * within one. `eachBatch` returns as soon as every message of the batch has started, so kafkajs
 * fetches on (the fetch position moves with `resolveOffset`), while commits trail behind: each
 * partition commits just past its longest finished prefix. A long handler thus never holds up
 * the messages behind it, only the commit.
 */
export class KafkaPipeline {
  private readonly slots: Slots;
  private readonly running = new Set<Promise<void>>();
  private readonly progress = new Map<number, PartitionProgress>();
  private stopping = false;
  private failed = false;

  constructor(private readonly options: PipelineOptions) {
    this.slots = new Slots(Math.max(1, options.maxInFlight));
  }

  readonly eachBatch = async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> => {
    const { topic, partition } = batch;
    const progress = this.progressOf(partition);
    for (const message of batch.messages) {
      if (this.stopping || this.failed || !isRunning() || isStale()) return;
      if (!this.slots.tryAcquire()) {
        // Waiting for a free slot can take as long as a handler: keep the membership alive meanwhile.
        const beat = setInterval(() => heartbeat().catch(() => undefined), this.options.heartbeatIntervalMs);
        try {
          await this.slots.acquire();
        } finally {
          clearInterval(beat);
        }
      }
      if (this.stopping || this.failed) {
        this.slots.release();
        return;
      }
      const offset = BigInt(message.offset);
      progress.start(offset);
      resolveOffset(message.offset);
      const run = this.options.handle(this.options.toIncoming(topic, partition, message)).then(
        () => {
          progress.finish(offset);
          this.commitSoon();
        },
        (error: unknown) => {
          // The message stays started and unfinished: no commit ever passes it.
          this.failed = true;
          this.options.log.error('handler rejected; stopping the consumer without committing the message', {
            partition,
            offset: message.offset,
            error: String(error),
          });
          this.options.onFailure(error);
        },
      );
      const tracked = run.finally(() => {
        this.slots.release();
        this.running.delete(tracked);
      });
      this.running.add(tracked);
    }
    await heartbeat().catch(() => undefined);
  };

  /** Starts nothing more, waits for the running handlers, then commits what they finished. */
  async drain(): Promise<void> {
    this.stopping = true;
    this.slots.cancel();
    while (this.running.size > 0) await Promise.all([...this.running]);
    this.commitSoon();
    await this.options.committer.flush();
  }

  private progressOf(partition: number): PartitionProgress {
    let progress = this.progress.get(partition);
    if (progress === undefined) {
      progress = new PartitionProgress();
      this.progress.set(partition, progress);
    }
    return progress;
  }

  private commitSoon(): void {
    for (const [partition, progress] of this.progress) {
      const offset = progress.committable();
      if (offset !== null) this.options.committer.advance(partition, offset);
    }
  }
}
