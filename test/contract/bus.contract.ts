import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { TopicNotFoundError, type Bus, type IncomingMessage } from '../../src/core/bus.port.js';
import { eventually, sleep } from '../support/eventually.js';
import { gate, messages, recordConsumer, uniqueName, type BusFixture } from './bus-contract.support.js';

export type { BusFixture } from './bus-contract.support.js';

/**
 * The behaviour every Bus adapter must show (Kafka, in-process): round trips with headers,
 * per-key order, at-least-once delivery across a stopped or crashed consumer, independent
 * groups, idempotent topic creation, and a stop that waits for in-flight handlers.
 * Each test uses its own topics and groups: a broker is shared by the whole run.
 */
export function busContract(name: string, setup: () => Promise<BusFixture>): void {
  describe(`${name}: bus contract`, () => {
    let fixture: BusFixture;
    let bus: Bus;

    beforeAll(async () => {
      fixture = await setup();
    });

    afterAll(async () => {
      await fixture?.dispose?.();
    });

    beforeEach(async () => {
      bus = await fixture.open();
    });

    afterEach(async () => {
      await bus?.close();
    });

    async function newTopic(partitions = 4): Promise<string> {
      const topic = uniqueName('topic');
      await bus.ensureTopics([{ topic, partitions }]);
      return topic;
    }

    describe('when a message is published', () => {
      it('delivers it with its key, value and headers, and where it is stored', async () => {
        const topic = await newTopic();
        const consumer = await recordConsumer(bus, { groupId: uniqueName('group'), topic });
        const headers = { 'message-id': 'm-1', 'content-type': 'application/json', note: 'naïve ☃' };
        await bus.publish(topic, [{ key: 'execution-1', value: '{"n":1}', headers }]);

        await eventually(() => consumer.completed.length >= 1, 'the message');
        const [message] = consumer.received;
        expect(message).toEqual({
          topic,
          partition: expect.any(Number),
          offset: expect.any(String),
          key: 'execution-1',
          value: '{"n":1}',
          headers,
        });
        expect(message.partition).toBeGreaterThanOrEqual(0);
        expect(message.partition).toBeLessThan(4);
        expect(message.offset).toMatch(/^\d+$/);
        await consumer.handle.stop();
      });
    });

    describe('when many keys are published across partitions', () => {
      it('keeps each key on one partition and delivers each key in publish order', async () => {
        const topic = await newTopic(4);
        const all = messages(400, 16);
        for (let start = 0; start < all.length; start += 50) await bus.publish(topic, all.slice(start, start + 50));
        const consumer = await recordConsumer(bus, { groupId: uniqueName('group'), topic, concurrency: 4 });

        await eventually(() => consumer.values(consumer.completed).size === all.length, {
          what: () => `${all.length} messages, got ${consumer.values().size}`,
        });
        const byKey = new Map<string, IncomingMessage[]>();
        for (const message of consumer.received) byKey.set(message.key, [...(byKey.get(message.key) ?? []), message]);
        expect(byKey.size).toBe(16);
        for (const [key, delivered] of byKey) {
          expect(new Set(delivered.map((message) => message.partition)).size).toBe(1);
          const sequence = firstOccurrences(delivered.map((message) => Number(message.value.slice(2))));
          expect({ key, sequence }).toEqual({ key, sequence: [...sequence].sort((a, b) => a - b) });
        }
        expect(new Set(consumer.received.map((message) => message.partition)).size).toBeGreaterThan(1);
        await consumer.handle.stop();
      });
    });

    describe('when a consumer stops mid-stream', () => {
      it('leaves every message it did not finish to the next consumer of its group', async () => {
        const topic = await newTopic();
        const groupId = uniqueName('group');
        const all = messages(60, 6);
        await bus.publish(topic, all);
        const blocked = gate();
        const reached = gate();
        const first = await recordConsumer(bus, {
          groupId,
          topic,
          concurrency: 2,
          during: async (_message, received) => {
            if (received.length >= 10) {
              reached.open();
              await blocked.promise;
            }
          },
        });

        await reached.promise;
        const stopped = first.handle.stop();
        blocked.open();
        await stopped;
        const second = await recordConsumer(bus, { groupId, topic });

        const finishedByFirst = first.values(first.completed);
        const missing = () => all.filter(({ value }) => !finishedByFirst.has(value) && !second.values(second.completed).has(value));
        await eventually(() => missing().length === 0, { what: () => `messages the first consumer left: ${missing().length} missing` });
        expect(first.crashes).toEqual([]);
        await second.handle.stop();
      });
    });

    describe('when a handler rejects', () => {
      it('stops the consumer without skipping the message, reports the error once, and redelivers it to the group', async () => {
        const topic = await newTopic();
        const groupId = uniqueName('group');
        const all = messages(40, 4);
        await bus.publish(topic, all);
        const failure = new Error('handler failed');
        let failed: IncomingMessage | undefined;
        const first = await recordConsumer(bus, {
          groupId,
          topic,
          during: (message, received) => {
            if (failed === undefined && received.length >= 8) {
              failed = message;
              throw failure;
            }
          },
        });

        await eventually(() => first.crashes.length > 0, 'onCrash');
        expect(first.crashes).toEqual([failure]);
        const poisoned = failed!;
        // Nothing after the failed message in its partition was handled: the consumer stopped.
        const later = first.completed.filter(
          (message) => message.partition === poisoned.partition && BigInt(message.offset) > BigInt(poisoned.offset),
        );
        expect(later).toEqual([]);
        expect(first.values(first.completed).has(poisoned.value)).toBe(false);
        await first.handle.stop();

        const second = await recordConsumer(bus, { groupId, topic });
        const finishedByFirst = first.values(first.completed);
        const missing = () => all.filter(({ value }) => !finishedByFirst.has(value) && !second.values(second.completed).has(value));
        await eventually(() => missing().length === 0, { what: () => `messages after the crash: ${missing().length} missing` });
        expect(second.values().has(poisoned.value)).toBe(true);
        expect(first.crashes).toHaveLength(1);
        await second.handle.stop();
      });
    });

    describe('when a batch handler consumes', () => {
      it('hands over consecutive messages of one partition in offset order, bounded in size, each exactly once', async () => {
        const topic = await newTopic();
        const all = messages(200, 8);
        await bus.publish(topic, all);
        const batches: IncomingMessage[][] = [];
        const handle = await bus.consume({
          groupId: uniqueName('group'),
          topic,
          maxBatchSize: 16,
          handleBatch: async (batch) => {
            batches.push(batch);
          },
        });
        await eventually(() => batches.flat().length >= all.length, { what: () => `${batches.flat().length} of ${all.length} messages` });
        await handle.stop();

        expect(
          batches
            .flat()
            .map((m) => m.value)
            .sort(),
        ).toEqual(all.map((m) => m.value).sort());
        for (const batch of batches) {
          expect(batch.length).toBeLessThanOrEqual(16);
          expect(new Set(batch.map((m) => m.partition)).size).toBe(1);
          const offsets = batch.map((m) => Number(m.offset));
          expect(offsets).toEqual(offsets.map((_, i) => offsets[0] + i));
        }
        // Everything was stored before the consumer joined: it came in batches, not one by one.
        expect(batches.some((batch) => batch.length > 1)).toBe(true);
        const orderOf = (key: string) =>
          batches
            .flat()
            .filter((m) => m.key === key)
            .map((m) => Number(m.value.slice(2)));
        for (let k = 0; k < 8; k++) expect(orderOf(`key-${k}`)).toEqual([...orderOf(`key-${k}`)].sort((a, b) => a - b));
      });

      it('redelivers the whole batch whose handler rejected to the next consumer of the group', async () => {
        const topic = await newTopic(1);
        const groupId = uniqueName('group');
        const all = messages(60, 3);
        await bus.publish(topic, all);
        const failure = new Error('batch failed');
        let refused: IncomingMessage[] | undefined;
        const crashes: unknown[] = [];
        const handled: IncomingMessage[] = [];
        const first = await bus.consume({
          groupId,
          topic,
          maxBatchSize: 10,
          handleBatch: async (batch) => {
            if (refused === undefined && handled.length >= 10) {
              refused = batch;
              throw failure;
            }
            handled.push(...batch);
          },
          onCrash: (error) => crashes.push(error),
        });
        await eventually(() => crashes.length > 0, 'onCrash');
        await first.stop();
        expect(crashes).toEqual([failure]);
        const firstRefused = Number(refused![0].offset);
        expect(handled.filter((m) => Number(m.offset) >= firstRefused)).toEqual([]);

        const second: IncomingMessage[] = [];
        const next = await bus.consume({ groupId, topic, handleBatch: async (batch) => void second.push(...batch) });
        await eventually(() => new Set([...handled, ...second].map((m) => m.value)).size === all.length, 'every message after the crash');
        await next.stop();
        expect(second.map((m) => m.value)).toEqual(expect.arrayContaining(refused!.map((m) => m.value)));
      });
    });

    describe('when messages of a partition may run side by side (maxInFlight)', () => {
      it('lets later messages finish while an earlier one runs, never more at once than allowed', async () => {
        const topic = await newTopic(1);
        const all = messages(30, 3);
        await bus.publish(topic, all);
        const slow = gate();
        const finished: string[] = [];
        let running = 0;
        let mostAtOnce = 0;
        const handle = await bus.consume({
          groupId: uniqueName('group'),
          topic,
          maxInFlight: 4,
          handle: async (message) => {
            running += 1;
            mostAtOnce = Math.max(mostAtOnce, running);
            if (message.value === 'v-0') await slow.promise;
            else await sleep(2);
            running -= 1;
            finished.push(message.value);
          },
        });
        await eventually(() => finished.length === all.length - 1, {
          what: () => `${finished.length} of ${all.length - 1} messages behind the slow one`,
        });
        expect(finished).not.toContain('v-0');
        slow.open();
        await eventually(() => finished.includes('v-0'), 'the slow message');
        await handle.stop();
        expect(mostAtOnce).toBeLessThanOrEqual(4);
        expect(mostAtOnce).toBeGreaterThan(1);
      });

      it('commits nothing past a message whose handler rejected, however many after it finished', async () => {
        const topic = await newTopic(1);
        const groupId = uniqueName('group');
        const all = messages(20, 2);
        await bus.publish(topic, all);
        const poisoned = gate();
        const failure = new Error('the third message failed');
        const crashes: unknown[] = [];
        const firstFinished: string[] = [];
        const first = await bus.consume({
          groupId,
          topic,
          maxInFlight: 8,
          handle: async (message) => {
            if (message.value === 'v-2') {
              await poisoned.promise;
              throw failure;
            }
            firstFinished.push(message.value);
          },
          onCrash: (error) => crashes.push(error),
        });
        await eventually(() => firstFinished.length >= 8, 'messages after the poisoned one');
        poisoned.open();
        await eventually(() => crashes.length > 0, 'onCrash');
        await first.stop();
        expect(crashes).toEqual([failure]);

        const again: string[] = [];
        const second = await bus.consume({ groupId, topic, maxInFlight: 8, handle: async (message) => void again.push(message.value) });
        await eventually(() => again.length >= all.length - 2, { what: () => `${again.length} redelivered` });
        await second.stop();
        // v-0 and v-1 finished before the failure and may be committed; from v-2 on everything comes again.
        expect(again).toEqual(expect.arrayContaining(all.slice(2).map((m) => m.value)));
      });
    });

    describe('when a group has handled what was published (end and committed offsets)', () => {
      it('reports every partition, ends that count the published messages, and commits that reach them once handled', async () => {
        const topic = await newTopic(3);
        const groupId = uniqueName('group');
        const zeros = new Map([
          [0, 0n],
          [1, 0n],
          [2, 0n],
        ]);
        expect(await bus.endOffsets(topic)).toEqual(zeros);
        expect(await bus.committedOffsets(groupId, topic)).toEqual(zeros);

        const all = messages(30, 6);
        await bus.publish(topic, all);
        const ends = await bus.endOffsets(topic);
        expect([...ends.keys()].sort()).toEqual([0, 1, 2]);
        expect([...ends.values()].reduce((sum, end) => sum + end, 0n)).toBe(30n);

        // A handler held at its first message: nothing of its partition may count as handled.
        const held = gate();
        const release = gate();
        let first = true;
        const consumer = await recordConsumer(bus, {
          groupId,
          topic,
          concurrency: 3,
          during: async () => {
            if (!first) return;
            first = false;
            held.open();
            await release.promise;
          },
        });
        await held.promise;
        const heldPartition = consumer.received[0].partition;
        const committedWhileHeld = await bus.committedOffsets(groupId, topic);
        expect(committedWhileHeld.get(heldPartition)).toBe(BigInt(consumer.received[0].offset));
        release.open();

        await eventually(async () => expect(new Map(await bus.committedOffsets(groupId, topic))).toEqual(ends), {
          what: 'the group to commit up to every end offset',
          intervalMs: 50,
        });
        // Another group has handled nothing.
        expect(await bus.committedOffsets(uniqueName('group'), topic)).toEqual(zeros);
        await consumer.handle.stop();
      });
    });

    describe('when two groups consume one topic', () => {
      it('delivers every message to each group', async () => {
        const topic = await newTopic();
        const all = messages(50, 5);
        const one = await recordConsumer(bus, { groupId: uniqueName('group-one'), topic });
        await bus.publish(topic, all.slice(0, 25));
        const two = await recordConsumer(bus, { groupId: uniqueName('group-two'), topic, concurrency: 2 });
        await bus.publish(topic, all.slice(25));

        const everything = () => [one, two].every((consumer) => consumer.values(consumer.completed).size === all.length);
        await eventually(everything, { what: () => `both groups: ${one.values().size} and ${two.values().size} of ${all.length}` });
        await Promise.all([one.handle.stop(), two.handle.stop()]);
      });
    });

    describe('when a consumer asks for a topic nobody created', () => {
      it('rejects with TopicNotFoundError naming it, and consumes once the topic exists', async () => {
        const topic = uniqueName('topic');
        const groupId = uniqueName('group');
        const refused = await recordConsumer(bus, { groupId, topic }).then(
          () => null,
          (error: unknown) => error,
        );
        expect(refused).toBeInstanceOf(TopicNotFoundError);
        expect((refused as TopicNotFoundError).topic).toBe(topic);

        await bus.ensureTopics([{ topic, partitions: 2 }]);
        const consumer = await recordConsumer(bus, { groupId, topic });
        await bus.publish(topic, [{ key: 'k', value: 'after' }]);
        await eventually(() => consumer.completed.length >= 1, 'the message on the created topic');
        expect(consumer.received.map((message) => message.value)).toEqual(['after']);
        await consumer.handle.stop();
      });
    });

    describe('when topics are ensured again', () => {
      it('succeeds, keeps the topics usable, and creates only what is missing', async () => {
        const topic = uniqueName('topic');
        const added = uniqueName('topic');
        await bus.ensureTopics([{ topic, partitions: 3 }]);
        await bus.ensureTopics([{ topic, partitions: 3 }]);
        await Promise.all([
          bus.ensureTopics([{ topic, partitions: 3 }]),
          bus.ensureTopics([
            { topic, partitions: 3 },
            { topic: added, partitions: 2 },
          ]),
        ]);

        const consumer = await recordConsumer(bus, { groupId: uniqueName('group'), topic: added });
        await bus.publish(topic, [{ key: 'k', value: 'first' }]);
        await bus.publish(added, [{ key: 'k', value: 'second' }]);
        await eventually(() => consumer.completed.length >= 1, 'the message on the added topic');
        expect(consumer.received.map((message) => message.value)).toEqual(['second']);
        await consumer.handle.stop();
      });
    });

    describe('when stop() is called while a handler runs', () => {
      it('waits for the handler, commits its message, and only then resolves', async () => {
        const topic = await newTopic();
        const groupId = uniqueName('group');
        const events: string[] = [];
        const entered = gate();
        const release = gate();
        const first = await recordConsumer(bus, {
          groupId,
          topic,
          during: async () => {
            entered.open();
            await release.promise;
            events.push('handler finished');
          },
        });
        await bus.publish(topic, [{ key: 'same-key', value: 'in-flight' }]);
        await entered.promise;

        const stopped = first.handle.stop().then(() => events.push('stopped'));
        // Give stop() every chance to resolve early; it must not.
        for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
        expect(events).toEqual([]);
        release.open();
        await stopped;
        expect(events).toEqual(['handler finished', 'stopped']);

        // Same key, same partition: a redelivery of the in-flight message would come first.
        await bus.publish(topic, [{ key: 'same-key', value: 'after' }]);
        const second = await recordConsumer(bus, { groupId, topic });
        await eventually(() => second.values(second.completed).has('after'), 'the message published after stop');
        expect(second.received.map((message) => message.value)).toEqual(['after']);
        await second.handle.stop();
      });
    });
  });
}

/** The list without repeats, each value where it first appeared (redeliveries may repeat). */
function firstOccurrences(values: number[]): number[] {
  const seen = new Set<number>();
  return values.filter((value) => !seen.has(value) && seen.add(value));
}
