import kafkajs, { type Admin, type Kafka, type Producer } from 'kafkajs';
import type { Bus, ConsumerHandle, ConsumerOptions, OutgoingMessage, PartitionOffsets } from '../../core/bus.port.js';
import { InvalidStateError } from '../../core/errors.js';
import { createLogger, type Logger } from '../../core/logger.js';
import { startKafkaConsumer, type KafkaConsumerSettings } from './kafka-consumer.js';
import { KAFKAJS_LOG_LEVEL, kafkaLogCreator } from './kafka-logging.js';
import { KafkaPublishBatcher, type TopicRecords } from './kafka-publish-batcher.js';
import { keyPartitioner } from './key-partitioner.js';
import { createMissingTopics } from './topic-creation.js';

export { BusPublishError } from './kafka-publish-batcher.js';

const { Kafka: KafkaClient } = kafkajs;

export interface KafkaBusOptions {
  /** Bootstrap brokers, `host:port`. */
  brokers: string[];
  clientId?: string;
  /** Receives kafkajs' own records at warn and above, and the adapter's. Default: warn+ to stdout. */
  logger?: Logger;
  /**
   * How long `publish` keeps retrying a retriable failure (a broker restart, a leader change)
   * before it rejects with BusPublishError, counted from the call (time queued behind an
   * earlier request included). Default 30 s.
   */
  publishTimeoutMs?: number;
  /** Most messages in one produce request; a single larger publish still goes alone. Default 1,000. */
  maxBatchMessages?: number;
  /** Most UTF-8 bytes of keys plus values in one produce request; a single larger publish still goes alone. Default 512 KiB. */
  maxBatchBytes?: number;
  /** Per-request timeout of every broker request. Default 30 s. */
  requestTimeoutMs?: number;
  /** A member that sends no heartbeat for this long is removed from its group. Default 30 s. */
  sessionTimeoutMs?: number;
  /** How long a rebalance waits for members busy in a handler to rejoin. Default 60 s. */
  rebalanceTimeoutMs?: number;
  /** Default 3 s, or a third of `sessionTimeoutMs` when that is less; heartbeats continue while a handler runs. */
  heartbeatIntervalMs?: number;
  /** How long an idle fetch waits on the broker; also bounds how long an idle `stop()` takes. Default 1 s. */
  maxWaitTimeMs?: number;
  /**
   * Least time between two offset commits of one consumer; finished offsets wait for the next.
   * A crash then redelivers up to this much more (consumers dedupe). Default 100 ms.
   */
  commitIntervalMs?: number;
}

/**
 * The Bus over Kafka (kafkajs). `publish` resolves only when the broker acknowledged every
 * message on all in-sync replicas (acks=-1), with one request in flight per connection so a
 * retry cannot reorder a partition. Concurrent publishes share produce requests (see
 * kafka-publish-batcher.ts). No idempotent producer: a retry may write a message twice, and
 * consumers dedupe by messageId. Consumers: see kafka-consumer.ts.
 */
export class KafkaBus implements Bus {
  readonly durable = true;
  private readonly kafka: Kafka;
  private readonly logger: Logger;
  private readonly publisher: KafkaPublishBatcher;
  private readonly consumerSettings: KafkaConsumerSettings;
  private readonly consumers = new Set<ConsumerHandle>();
  private producer: Promise<Producer> | undefined;
  private admin: Promise<Admin> | undefined;
  private closed = false;
  private readonly requestTimeoutMs: number;

  constructor(options: KafkaBusOptions) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.logger = options.logger ?? createLogger({ level: 'warn' });
    const sessionTimeoutMs = options.sessionTimeoutMs ?? 30_000;
    this.consumerSettings = {
      sessionTimeoutMs,
      rebalanceTimeoutMs: options.rebalanceTimeoutMs ?? 60_000,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? Math.min(3_000, Math.floor(sessionTimeoutMs / 3)),
      maxWaitTimeMs: options.maxWaitTimeMs ?? 1_000,
      commitIntervalMs: options.commitIntervalMs ?? 100,
    };
    this.kafka = new KafkaClient({
      clientId: options.clientId ?? 'flostra',
      brokers: options.brokers,
      requestTimeout: this.requestTimeoutMs,
      connectionTimeout: 3_000,
      // Each attempt gives up within a few seconds; publish() and the consumers retry around it.
      retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
      logLevel: KAFKAJS_LOG_LEVEL,
      logCreator: kafkaLogCreator(this.logger),
    });
    this.publisher = new KafkaPublishBatcher({
      send: (batch) => this.sendBatch(batch),
      isRetriable,
      timeoutMs: options.publishTimeoutMs ?? 30_000,
      maxMessages: options.maxBatchMessages ?? 1_000,
      maxBytes: options.maxBatchBytes ?? 512 * 1024,
      logger: this.logger,
    });
  }

  async publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    this.assertOpen();
    await this.publisher.publish(topic, messages);
  }

  async consume(options: ConsumerOptions): Promise<ConsumerHandle> {
    this.assertOpen();
    const handle = await startKafkaConsumer(this.kafka, options, this.consumerSettings, this.logger);
    const tracked: ConsumerHandle = {
      stop: async () => {
        this.consumers.delete(tracked);
        await handle.stop();
      },
    };
    this.consumers.add(tracked);
    return tracked;
  }

  async endOffsets(topic: string): Promise<PartitionOffsets> {
    this.assertOpen();
    const admin = await this.connectedAdmin();
    const partitions = await admin.fetchTopicOffsets(topic);
    return new Map(partitions.map(({ partition, high }) => [partition, BigInt(high)]));
  }

  async committedOffsets(groupId: string, topic: string): Promise<PartitionOffsets> {
    this.assertOpen();
    const admin = await this.connectedAdmin();
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    // Kafka answers -1 for a partition the group never committed on.
    return new Map((offsets?.partitions ?? []).map(({ partition, offset }) => [partition, offset.startsWith('-') ? 0n : BigInt(offset)]));
  }

  async ensureTopics(topics: { topic: string; partitions: number }[]): Promise<void> {
    this.assertOpen();
    const admin = await this.connectedAdmin();
    await createMissingTopics(admin, topics, { timeoutMs: this.requestTimeoutMs });
  }

  /**
   * Stops every consumer (waiting for in-flight handlers) and settles every publish already
   * accepted (sent once more without retries, or rejected), then disconnects.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const published = this.publisher.close();
    await Promise.all([...this.consumers].map((consumer) => consumer.stop()));
    await published;
    const clients = [this.producer, this.admin].filter((client) => client !== undefined);
    for (const client of clients) {
      try {
        await (await client).disconnect();
      } catch (error) {
        // A client that never connected has nothing to close.
        this.logger.debug('kafka client did not disconnect cleanly', { component: 'kafka-bus', error: String(error) });
      }
    }
  }

  private async sendBatch(topicMessages: TopicRecords[]): Promise<void> {
    const producer = await this.connectedProducer();
    await producer.sendBatch({ acks: -1, topicMessages });
  }

  private connectedProducer(): Promise<Producer> {
    if (this.producer !== undefined) return this.producer;
    const pending = (async () => {
      const producer = this.kafka.producer({
        idempotent: false,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: keyPartitioner,
      });
      await producer.connect();
      return producer;
    })();
    this.producer = pending;
    // A failed connect is retried by the next publish, not cached.
    pending.catch(() => {
      if (this.producer === pending) this.producer = undefined;
    });
    return pending;
  }

  private connectedAdmin(): Promise<Admin> {
    if (this.admin !== undefined) return this.admin;
    const pending = (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })();
    this.admin = pending;
    pending.catch(() => {
      if (this.admin === pending) this.admin = undefined;
    });
    return pending;
  }

  private assertOpen(): void {
    if (this.closed) throw new InvalidStateError('the Kafka bus is closed');
  }
}

/**
 * kafkajs marks transient failures retriable, but once its own retries are exhausted it wraps
 * the last one in a non-retriable error, and a refused connection (a restarting broker) can come
 * out that way too: a publish keeps trying, until its deadline, when anything in the chain is
 * transient.
 */
const TRANSIENT_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSLockTimeout',
]);
const TRANSIENT_TEXT =
  /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Connection error|Closed connection|broker not found|not the leader|leader not available/i;

function isRetriable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; depth++) {
    const { name, message, retriable, cause, originalError } = current as Error & {
      retriable?: unknown;
      cause?: unknown;
      originalError?: unknown;
    };
    if (retriable === true || TRANSIENT_NAMES.has(name) || TRANSIENT_TEXT.test(message)) return true;
    current = cause ?? originalError;
  }
  return false;
}
