import type { Consumer, EachBatchPayload, IHeaders, Kafka, KafkaMessage } from 'kafkajs';
import {
  batchHandlerOf,
  TopicNotFoundError,
  type ConsumerHandle,
  type ConsumerOptions,
  type IncomingMessage,
} from '../../core/bus.port.js';
import type { Logger } from '../../core/logger.js';
import { KafkaPipeline } from './kafka-pipeline.js';
import { OffsetCommitter } from './offset-committer.js';

export interface KafkaConsumerSettings {
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  heartbeatIntervalMs: number;
  maxWaitTimeMs: number;
  /** Least time between two offset commits of one consumer (see OffsetCommitter). */
  commitIntervalMs: number;
}

/**
 * Starts one consumer-group member. Offsets are committed by hand, after the handler of the
 * message (or of the batch holding it) resolved (autoCommit off, nothing auto-resolved), in the
 * background so that the next fetch does not wait for the coordinator; `stop()` lets running
 * handlers finish and commits what they finished before it leaves the group. A handler that
 * rejects stops the whole consumer without committing, so the next member of the group gets
 * those messages again (at-least-once, no skipping).
 */
export async function startKafkaConsumer(
  kafka: Kafka,
  options: ConsumerOptions,
  settings: KafkaConsumerSettings,
  logger: Logger,
): Promise<ConsumerHandle> {
  const log = logger.child({ component: 'kafka-consumer', groupId: options.groupId, topic: options.topic });
  let failure: { error: unknown } | undefined;
  let stopping: Promise<void> | undefined;
  let reported = false;
  const report = (error: unknown) => {
    if (reported) return;
    reported = true;
    options.onCrash?.(error);
  };

  const consumer: Consumer = kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: settings.sessionTimeoutMs,
    rebalanceTimeout: settings.rebalanceTimeoutMs,
    heartbeatInterval: settings.heartbeatIntervalMs,
    maxWaitTimeInMs: settings.maxWaitTimeMs,
    allowAutoTopicCreation: false,
    retry: {
      // kafkajs' defaults: a fetch or commit that keeps failing for ~10 s crashes the consumer.
      retries: 5,
      initialRetryTime: 300,
      maxRetryTime: 30_000,
      // kafkajs restarts a consumer that crashed on a retriable error (a broker restart, a lost
      // coordinator) by itself; anything else arrives at the CRASH listener below with restart=false.
      restartOnFailure: async (error) => {
        log.warn('consumer crashed on a retriable error; restarting', { error: String(error) });
        return stopping === undefined;
      },
    },
  });

  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (payload.restart || stopping !== undefined) return;
    log.error('consumer crashed and will not restart', { error: String(payload.error) });
    failure ??= { error: payload.error };
    void stop();
  });

  const committer = new OffsetCommitter(consumer, options.topic, log, settings.commitIntervalMs);
  const pipeline =
    'handle' in options && options.maxInFlight !== undefined
      ? new KafkaPipeline({
          topic: options.topic,
          maxInFlight: options.maxInFlight,
          heartbeatIntervalMs: settings.heartbeatIntervalMs,
          handle: options.handle,
          toIncoming,
          onFailure: (error) => {
            failure ??= { error };
            void stop();
          },
          committer,
          log,
        })
      : null;
  const handling = new Set<Promise<void>>();

  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      // Fetch nothing more, let the running handlers finish, and commit what they finished
      // while still a member of the group.
      try {
        consumer.pause([{ topic: options.topic }]);
      } catch {
        // Not running yet: there is nothing to pause.
      }
      if (pipeline !== null) await pipeline.drain();
      while (handling.size > 0) await Promise.all([...handling]);
      await committer.flush();
      try {
        await consumer.disconnect();
      } catch (error) {
        log.warn('consumer did not disconnect cleanly', { error: String(error) });
      }
      if (failure !== undefined) report(failure.error);
    })());

  const { handleBatch, maxBatchSize } = batchHandlerOf(options);
  const eachBatch = (payload: EachBatchPayload): Promise<void> => {
    const run = handleInOrder(payload);
    const tracked = run.finally(() => handling.delete(tracked));
    handling.add(tracked);
    return run;
  };

  const handleInOrder = async ({ batch, resolveOffset, heartbeat, isRunning, isStale, pause }: EachBatchPayload) => {
    const { topic, partition } = batch;
    for (let start = 0; start < batch.messages.length; start += maxBatchSize) {
      if (failure !== undefined || stopping !== undefined || !isRunning() || isStale()) return;
      const slice = batch.messages.slice(start, start + maxBatchSize);
      const last = slice[slice.length - 1].offset;
      // A long handler must not cost the member its place in the group: keep heartbeating.
      // A failed heartbeat (say, a rebalance) is surfaced by the heartbeat after the handler.
      const beat = setInterval(() => heartbeat().catch(() => undefined), settings.heartbeatIntervalMs);
      try {
        await handleBatch(slice.map((message) => toIncoming(topic, partition, message)));
      } catch (error) {
        failure ??= { error };
        log.error('handler rejected; stopping the consumer without committing', {
          partition,
          offset: slice[0].offset,
          count: slice.length,
          error: String(error),
        });
        pause();
        void stop();
        return;
      } finally {
        clearInterval(beat);
      }
      resolveOffset(last);
      // Committed in the background: the next fetch need not wait for the coordinator.
      committer.advance(partition, BigInt(last) + 1n);
      await heartbeat();
    }
  };

  try {
    await consumer.connect();
    // A group with no committed offset starts at the earliest message: starting at the latest
    // would lose whatever was published before the group first joined.
    await consumer.subscribe({ topics: [options.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: Math.max(1, options.concurrency ?? 1),
      eachBatch: pipeline?.eachBatch ?? eachBatch,
    });
  } catch (error) {
    stopping = Promise.resolve();
    await consumer.disconnect().catch(() => undefined);
    // kafkajs's subscribe asks for the topic's metadata; the broker answers this for a missing one.
    if ((error as { type?: unknown }).type === 'UNKNOWN_TOPIC_OR_PARTITION') throw new TopicNotFoundError(options.topic, { cause: error });
    throw error;
  }
  return { stop };
}

function toIncoming(topic: string, partition: number, message: KafkaMessage): IncomingMessage {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString('utf8') ?? '',
    value: message.value?.toString('utf8') ?? '',
    headers: toHeaders(message.headers),
  };
}

function toHeaders(headers: IHeaders | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) result[name] = first.toString();
  }
  return result;
}
