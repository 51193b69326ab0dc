/**
 * The message bus port: Kafka in production, an in-process bus in the embedded default. Both
 * keep one contract (test/contract/bus.contract.ts): per-key order, at-least-once delivery, and
 * redelivery of everything a consumer had not committed when it died.
 */

export interface OutgoingMessage {
  /** Partitioning key: the executionId, so one execution's messages stay in order. */
  key: string;
  /** JSON text. */
  value: string;
  headers?: Record<string, string>;
}

export interface IncomingMessage {
  topic: string;
  partition: number;
  /** Offset within the partition, as a decimal string. */
  offset: string;
  key: string;
  value: string;
  headers: Record<string, string>;
}

interface ConsumerBase {
  /** A group with no committed offset starts at the earliest message still stored. */
  groupId: string;
  topic: string;
  /** How many partitions are handled at once (default 1). */
  concurrency?: number;
  /** Called once if the consumer stops on an error. */
  onCrash?: (error: unknown) => void;
}

/**
 * Messages of one partition are handled in order, one at a time unless `maxInFlight` says
 * otherwise. A message's offset is committed only after its handler resolved; if it rejects,
 * the consumer stops (and reports the error) rather than skip it.
 */
export interface MessageConsumerOptions extends ConsumerBase {
  handle: (message: IncomingMessage) => Promise<void>;
  /**
   * Messages handled at once across this consumer's partitions, later messages of a partition
   * starting before earlier ones finished (default: one at a time per partition). A partition's
   * offset is committed only past messages that finished together with every earlier one, so a
   * long handler holds back its partition's commit, never its partition's other messages. A
   * handler that rejects stops the consumer; nothing from that message on is committed.
   */
  maxInFlight?: number;
}

/**
 * Consecutive messages of one partition arrive together, in offset order (at most
 * `maxBatchSize`, default 500): whatever the bus has fetched, never waiting for more. The
 * batch's offsets are committed only after the handler resolved; if it rejects, the consumer
 * stops and the whole batch comes again.
 */
export interface BatchConsumerOptions extends ConsumerBase {
  handleBatch: (messages: IncomingMessage[]) => Promise<void>;
  maxBatchSize?: number;
}

export type ConsumerOptions = MessageConsumerOptions | BatchConsumerOptions;

export const DEFAULT_MAX_CONSUMER_BATCH = 500;

/** The handler of `options` as a batch handler, and the largest batch it takes. */
export function batchHandlerOf(options: ConsumerOptions): {
  handleBatch: (messages: IncomingMessage[]) => Promise<void>;
  maxBatchSize: number;
} {
  if ('handleBatch' in options)
    return { handleBatch: options.handleBatch, maxBatchSize: Math.max(1, options.maxBatchSize ?? DEFAULT_MAX_CONSUMER_BATCH) };
  const { handle } = options;
  return { handleBatch: (messages) => handle(messages[0]), maxBatchSize: 1 };
}

/** An offset for every partition of a topic, by partition number. */
export type PartitionOffsets = ReadonlyMap<number, bigint>;

export interface ConsumerHandle {
  /** Stops fetching, waits for in-flight handlers, commits what they finished, leaves the group. */
  stop(): Promise<void>;
}

export interface Bus {
  /**
   * True when acknowledged messages outlive this process (Kafka). The in-process bus forgets
   * everything on a restart, so whoever publishes to it must be able to send again.
   */
  readonly durable: boolean;
  /**
   * Resolves only when every message is acknowledged by the broker (all in-sync replicas);
   * otherwise rejects after a bounded time, never dropping silently. A retried publish may
   * store a message twice: consumers dedupe by messageId.
   */
  publish(topic: string, messages: OutgoingMessage[]): Promise<void>;
  /** Rejects with TopicNotFoundError when `options.topic` does not exist. */
  consume(options: ConsumerOptions): Promise<ConsumerHandle>;
  /**
   * Per partition of `topic`, the offset the next message published there will get (Kafka's
   * high watermark): everything published and acknowledged before the call lies below it.
   */
  endOffsets(topic: string): Promise<PartitionOffsets>;
  /**
   * Per partition of `topic`, the offset consumer group `groupId` has committed (the next it
   * will read; every message below it was handled), 0 where it has committed nothing.
   */
  committedOffsets(groupId: string, topic: string): Promise<PartitionOffsets>;
  /** Creates the topics if missing (idempotent). */
  ensureTopics(topics: { topic: string; partitions: number }[]): Promise<void>;
  close(): Promise<void>;
}

export const BUS = Symbol('Bus');

/**
 * `consume` was asked for a topic that does not exist (yet). Topics are created by the roles that
 * own them (the dispatcher creates the dispatch topic, the ingestor the results topics), which in
 * a deployment of separate processes may start after their consumers.
 */
export class TopicNotFoundError extends Error {
  constructor(
    readonly topic: string,
    options?: { cause?: unknown },
  ) {
    super(`topic ${topic} does not exist yet`, options);
    this.name = 'TopicNotFoundError';
  }
}

/** Consumer group of the ingestor: its committed offsets on the results topic say what the control plane has handled. */
export const INGESTOR_GROUP_ID = 'flostra-ingestor';

/**
 * Largest result message on `flostra.results.v1` (docs/api.md, "Results"): the ingestor
 * dead-letters larger ones unread, so a worker never publishes one.
 */
export const MAX_RESULT_MESSAGE_BYTES = 1024 * 1024;

/** Header of a worker result: when the worker produced it, in epoch milliseconds (the ingest lag is measured from it). */
export const PRODUCED_AT_HEADER = 'flostra-produced-at';

/** Topics of the worker protocol (docs/api.md, "Worker protocol"). */
export const TOPICS = {
  dispatch: 'flostra.dispatch.v1',
  results: 'flostra.results.v1',
  resultsDlq: 'flostra.results.dlq.v1',
} as const;
