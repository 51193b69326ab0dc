import {
  TopicNotFoundError,
  type Bus,
  type ConsumerHandle,
  type ConsumerOptions,
  type OutgoingMessage,
  type PartitionOffsets,
} from '../../core/bus.port.js';
import { InvalidStateError } from '../../core/errors.js';
import { ConsumerGroup, GroupMember } from './consumer-group.js';
import { TopicLog } from './topic-log.js';

/**
 * The Bus of the embedded default, with Kafka's contract inside one process: topics of N
 * partitions chosen by a hash of the key, per-partition append-only logs, consumer groups with
 * committed offsets, per-key order, and at-least-once delivery (a message is committed only
 * after its handler resolved; a member that stops or whose handler rejects leaves its
 * uncommitted messages to the next member of the group). A group without committed offsets
 * starts at the beginning of the log, as the Kafka adapter does.
 *
 * Memory is not bounded: every message published since start-up stays in memory (see TopicLog).
 * Nothing survives a restart of the process; the event store is the durable outbox.
 */
export class InProcessBus implements Bus {
  readonly durable = false;
  private readonly topics = new Map<string, TopicLog>();
  /** Keyed by topic, then group id: offsets are per group and topic, as in Kafka. */
  private readonly groups = new Map<string, Map<string, ConsumerGroup>>();
  private closed = false;

  async publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    this.assertOpen();
    const log = this.topic(topic);
    // Stored synchronously and in call order, so per-key order holds across publish calls.
    for (const message of messages) {
      log.append({ key: message.key, value: message.value, headers: { ...message.headers } });
    }
    log.appended.notify();
  }

  async consume(options: ConsumerOptions): Promise<ConsumerHandle> {
    this.assertOpen();
    if (!this.topics.has(options.topic)) throw new TopicNotFoundError(options.topic);
    const log = this.topic(options.topic);
    const groups = this.groups.get(options.topic) ?? new Map<string, ConsumerGroup>();
    this.groups.set(options.topic, groups);
    let group = groups.get(options.groupId);
    if (group === undefined) {
      group = new ConsumerGroup(log);
      groups.set(options.groupId, group);
    }
    const member = new GroupMember(options);
    group.join(member);
    const joined = group;
    return { stop: () => joined.leave(member) };
  }

  async endOffsets(topic: string): Promise<PartitionOffsets> {
    this.assertOpen();
    return new Map(this.topic(topic).partitions.map((messages, partition) => [partition, BigInt(messages.length)]));
  }

  async committedOffsets(groupId: string, topic: string): Promise<PartitionOffsets> {
    this.assertOpen();
    const log = this.topic(topic);
    const group = this.groups.get(topic)?.get(groupId);
    return new Map(log.partitions.map((_, partition) => [partition, BigInt(group?.committedOffset(partition) ?? 0)]));
  }

  async ensureTopics(topics: { topic: string; partitions: number }[]): Promise<void> {
    this.assertOpen();
    for (const { topic, partitions } of topics) {
      if (!Number.isInteger(partitions) || partitions < 1) {
        throw new InvalidStateError(`topic ${topic}: partitions must be a positive integer, got ${partitions}`);
      }
      // An existing topic keeps its partition count, as Kafka's CreateTopics does.
      if (!this.topics.has(topic)) this.topics.set(topic, new TopicLog(topic, partitions));
    }
  }

  /** Stops every consumer (waiting for in-flight handlers); publishing afterwards throws. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const groups = [...this.groups.values()].flatMap((byGroup) => [...byGroup.values()]);
    await Promise.all(groups.map((group) => group.close()));
    for (const log of this.topics.values()) log.appended.close();
  }

  private topic(name: string): TopicLog {
    const log = this.topics.get(name);
    if (log === undefined) throw new InvalidStateError(`unknown topic ${name}: call ensureTopics first`, { topic: name });
    return log;
  }

  private assertOpen(): void {
    if (this.closed) throw new InvalidStateError('the in-process bus is closed');
  }
}
