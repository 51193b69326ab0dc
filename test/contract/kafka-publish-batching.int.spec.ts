import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import kafkajs from 'kafkajs';
import { BusPublishError, KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import type { IncomingMessage } from '../../src/core/bus.port.js';
import { createLogger } from '../../src/core/logger.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { eventually, sleep } from '../support/eventually.js';
import { recordConsumer, uniqueName } from './bus-contract.support.js';

/** Concurrent publishes share produce requests on the run's real broker (kafka-publish-batcher.ts). */
describe('Kafka bus under concurrent publishes', () => {
  let bus: KafkaBus;

  beforeEach(() => {
    // A small request bound, so that 200 calls need many requests, some sent while others are in flight.
    bus = new KafkaBus({ brokers: testKafkaBrokers(), logger: createLogger({ level: 'silent' }), maxBatchMessages: 32 });
  });

  afterEach(async () => {
    await bus.close();
  });

  it('acknowledges every call and delivers each message once, every key in call order', async () => {
    const topics = [uniqueName('batched'), uniqueName('batched')];
    await bus.ensureTopics(topics.map((topic) => ({ topic, partitions: 4 })));
    const consumers = await Promise.all(
      topics.map((topic) => recordConsumer(bus, { groupId: uniqueName('group'), topic, concurrency: 4 })),
    );

    const calls: Promise<void>[] = [];
    let total = 0;
    for (let call = 0; call < 200; call++) {
      const messages = Array.from({ length: 1 + (call % 3) }, (_, n) => ({ key: `execution-${(call + n) % 10}`, value: `${call}.${n}` }));
      total += messages.length;
      calls.push(bus.publish(topics[call % 2], messages));
      if (call % 10 === 9) await sleep(1);
    }
    await Promise.all(calls);

    const completed = () => consumers.reduce((sum, consumer) => sum + consumer.values(consumer.completed).size, 0);
    await eventually(() => completed() === total, { what: () => `${total} messages, got ${completed()}` });
    const received = consumers.flatMap((consumer) => consumer.received);
    expect(received).toHaveLength(total);
    for (const [topic, key] of keysOf(received)) {
      const sequence = received
        .filter((message) => message.topic === topic && message.key === key)
        .map((message) => message.value.split('.').map(Number));
      const inCallOrder = [...sequence].sort(([callA, nA], [callB, nB]) => callA - callB || nA - nB);
      expect({ topic, key, sequence }).toEqual({ topic, key, sequence: inCallOrder });
    }
    await Promise.all(consumers.map((consumer) => consumer.handle.stop()));
  });

  it('rejects only the call whose record the broker refuses, and delivers the calls that shared its request', async () => {
    // The broker refuses any record batch above 4 KiB on this topic: a non-retriable error.
    const limited = uniqueName('limited');
    const admin = new kafkajs.Kafka({ brokers: testKafkaBrokers(), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic: limited, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '4096' }] }],
      });
    } finally {
      await admin.disconnect();
    }
    const consumer = await recordConsumer(bus, { groupId: uniqueName('group'), topic: limited });

    const outcomes = await Promise.allSettled([
      bus.publish(limited, [{ key: 'k', value: 'before' }]),
      bus.publish(limited, [{ key: 'k', value: 'x'.repeat(8_192) }]),
      bus.publish(limited, [{ key: 'k', value: 'after' }]),
    ]);

    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(BusPublishError);
    await eventually(() => consumer.values(consumer.completed).has('after'), 'the calls that shared the refused request');
    expect(consumer.received.map((message) => message.value)).toEqual(['before', 'after']);
    await consumer.handle.stop();
  });
});

function keysOf(messages: IncomingMessage[]): [string, string][] {
  const seen = new Map(messages.map((message) => [`${message.topic}\n${message.key}`, [message.topic, message.key] as [string, string]]));
  return [...seen.values()];
}
