import { batchHandlerOf, type ConsumerOptions, type IncomingMessage } from '../../core/bus.port.js';
import { PartitionProgress } from '../partition-progress.js';
import { Slots } from '../slots.js';
import { Signal } from './signal.js';
import type { TopicLog } from './topic-log.js';

/** One `consume()` call: a member of its group until it stops or a handler rejects. */
export class GroupMember {
  active = true;
  readonly slots: Slots;
  /** Set when messages of one partition may run side by side (`maxInFlight`). */
  readonly pipeline: Slots | null;
  readonly maxBatchSize: number;
  private readonly handleBatch: (messages: IncomingMessage[]) => Promise<void>;
  private readonly inFlight = new Set<Promise<unknown>>();
  private failure: { error: unknown } | undefined;
  private finished: Promise<void> | undefined;

  constructor(private readonly options: ConsumerOptions) {
    this.slots = new Slots(Math.max(1, options.concurrency ?? 1));
    this.pipeline = 'handle' in options && options.maxInFlight !== undefined ? new Slots(Math.max(1, options.maxInFlight)) : null;
    ({ handleBatch: this.handleBatch, maxBatchSize: this.maxBatchSize } = batchHandlerOf(options));
  }

  /** Runs the handler; the returned promise settles as the handler does. */
  deliver(messages: IncomingMessage[]): Promise<void> {
    const run = Promise.resolve().then(() => this.handleBatch(messages));
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
    return run;
  }

  recordFailure(error: unknown): void {
    this.failure ??= { error };
  }

  /** Leaves the group once: waits for in-flight handlers, then reports the first failure, if any. */
  finish(): Promise<void> {
    this.active = false;
    this.slots.cancel();
    this.pipeline?.cancel();
    this.finished ??= (async () => {
      while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
      if (this.failure !== undefined) this.options.onCrash?.(this.failure.error);
    })();
    return this.finished;
  }
}

/**
 * A consumer group's view of one topic: committed offsets per partition, members in join
 * order, and one runner per partition. The runner hands the partition's messages, in order (one
 * at a time, or what has arrived as one batch), to whichever member owns the partition now, and
 * commits offsets only after the handler resolved; a rejected message or batch stays
 * uncommitted and goes to the next owner.
 */
export class ConsumerGroup {
  private readonly committed: number[];
  private readonly members: GroupMember[] = [];
  private assignment: (GroupMember | undefined)[];
  private readonly changed = new Signal();
  private closed = false;
  private readonly runners: Promise<void>[];

  constructor(private readonly log: TopicLog) {
    this.committed = log.partitions.map(() => 0);
    this.assignment = log.partitions.map(() => undefined);
    this.runners = log.partitions.map((_, partition) => this.run(partition));
  }

  /** The next offset of `partition` the group will hand out: everything below it was handled. */
  committedOffset(partition: number): number {
    return this.committed[partition] ?? 0;
  }

  join(member: GroupMember): void {
    this.members.push(member);
    this.rebalance();
  }

  leave(member: GroupMember): Promise<void> {
    const index = this.members.indexOf(member);
    if (index >= 0) {
      this.members.splice(index, 1);
      this.rebalance();
    }
    return member.finish();
  }

  async close(): Promise<void> {
    await Promise.all([...this.members].map((member) => this.leave(member)));
    this.closed = true;
    this.changed.close();
    await Promise.all(this.runners);
  }

  private rebalance(): void {
    // Round robin in join order, as Kafka's round-robin assignor does for a single topic.
    this.assignment = this.log.partitions.map((_, partition) =>
      this.members.length === 0 ? undefined : this.members[partition % this.members.length],
    );
    this.changed.notify();
  }

  private async run(partition: number): Promise<void> {
    const messages = this.log.partitions[partition];
    while (!this.closed) {
      const owner = this.assignment[partition];
      const offset = this.committed[partition];
      if (owner === undefined || offset >= messages.length) {
        await Promise.race([this.changed.wait(), this.log.appended.wait()]);
        continue;
      }
      if (owner.pipeline !== null) {
        await this.runPipelined(partition, owner, owner.pipeline);
        continue;
      }
      await owner.slots.acquire();
      try {
        if (this.assignment[partition] !== owner || !owner.active) continue;
        const batch = messages.slice(offset, offset + owner.maxBatchSize).map((_, index) => this.message(partition, offset + index));
        try {
          await owner.deliver(batch);
          this.committed[partition] = offset + batch.length;
        } catch (error) {
          // No skipping: the batch stays uncommitted and the member leaves the group.
          owner.recordFailure(error);
          void this.leave(owner);
        }
      } finally {
        owner.slots.release();
      }
    }
  }

  /**
   * While `owner` holds the partition: starts its messages in order without waiting for earlier
   * ones to finish (up to the member's limit), and commits just past the longest finished prefix.
   */
  private async runPipelined(partition: number, owner: GroupMember, inFlight: Slots): Promise<void> {
    const messages = this.log.partitions[partition];
    const progress = new PartitionProgress();
    let position = this.committed[partition];
    const holds = () => !this.closed && owner.active && this.assignment[partition] === owner;
    while (holds()) {
      if (position >= messages.length) {
        await Promise.race([this.changed.wait(), this.log.appended.wait()]);
        continue;
      }
      await inFlight.acquire();
      if (!holds()) {
        inFlight.release();
        return;
      }
      const offset = position++;
      progress.start(BigInt(offset));
      owner
        .deliver([this.message(partition, offset)])
        .then(
          () => {
            progress.finish(BigInt(offset));
            // Commits only move forward: a previous owner finishing late never rolls one back.
            this.committed[partition] = Math.max(this.committed[partition], Number(progress.committable()));
          },
          (error: unknown) => {
            // No skipping: the message stays unfinished, so no commit passes it; the member leaves.
            owner.recordFailure(error);
            void this.leave(owner);
          },
        )
        .finally(() => inFlight.release());
    }
  }

  private message(partition: number, offset: number): IncomingMessage {
    const stored = this.log.partitions[partition][offset];
    return {
      topic: this.log.name,
      partition,
      offset: String(offset),
      key: stored.key,
      value: stored.value,
      headers: { ...stored.headers },
    };
  }
}
