import { describe, expect, it } from '@jest/globals';
import { InvalidStateError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { BusPublishError, KafkaPublishBatcher, type PublishBatcherOptions, type TopicRecords } from './kafka-publish-batcher.js';

/** What the fake broker classifies as worth retrying (a leader change, say). */
class Transient extends Error {}

interface Request {
  batch: TopicRecords[];
  ack(): void;
  fail(error: unknown): void;
}

/** The broker: records each request and answers it when the test says so, or through `reply`. */
function fakeBroker(reply?: (batch: TopicRecords[]) => Promise<void>) {
  const requests: Request[] = [];
  let arrived: () => void = () => undefined;
  const send = (batch: TopicRecords[]): Promise<void> =>
    new Promise<void>((ack, fail) => {
      requests.push({ batch, ack, fail });
      arrived();
      if (reply) reply(batch).then(ack, fail);
    });
  /** The request with this index, once it was sent. */
  const request = async (index: number): Promise<Request> => {
    while (requests.length <= index) await new Promise<void>((resolve) => (arrived = resolve));
    return requests[index];
  };
  return { send, requests, request };
}

function batcherOver(send: PublishBatcherOptions['send'], options: Partial<PublishBatcherOptions> = {}) {
  return new KafkaPublishBatcher({
    send,
    isRetriable: (error) => error instanceof Transient,
    timeoutMs: 30_000,
    maxMessages: 1_000,
    maxBytes: 512 * 1024,
    logger: createLogger({ level: 'silent' }),
    ...options,
  });
}

/** What one request carried: topic, then the values in the order they were sent. */
const carried = (request: Request) => request.batch.map(({ topic, messages }) => [topic, messages.map((message) => message.value)]);
const msg = (value: string, key = 'k') => ({ key, value });
/** Lets every pending promise callback and the drain loop run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function tracked(promise: Promise<void>) {
  const state = { done: false, promise };
  promise.then(
    () => (state.done = true),
    () => undefined,
  );
  return state;
}

describe('kafka publish batcher', () => {
  describe('when publishes arrive while a request is in flight', () => {
    it('sends them together as the next request, grouped by topic in call order, and resolves each only on its acknowledgement', async () => {
      const broker = fakeBroker();
      const batcher = batcherOver(broker.send);
      const first = tracked(batcher.publish('a', [msg('a1')]));
      const inFlight = await broker.request(0);

      const queued = [
        batcher.publish('a', [msg('a2'), msg('a3')]),
        batcher.publish('b', [msg('b1')]),
        batcher.publish('a', [msg('a4')]),
      ].map(tracked);
      await settle();
      expect(broker.requests).toHaveLength(1);
      expect(first.done).toBe(false);

      inFlight.ack();
      await first.promise;
      const next = await broker.request(1);
      expect(carried(next)).toEqual([
        ['a', ['a2', 'a3', 'a4']],
        ['b', ['b1']],
      ]);
      await settle();
      expect(queued.map((call) => call.done)).toEqual([false, false, false]);
      next.ack();
      await Promise.all(queued.map((call) => call.promise));
      expect(broker.requests).toHaveLength(2);
    });

    it('sends publishes of the same tick in one request', async () => {
      const broker = fakeBroker(async () => undefined);
      const batcher = batcherOver(broker.send);
      await Promise.all([batcher.publish('a', [msg('1')]), batcher.publish('a', [msg('2')])]);
      expect(broker.requests.map(carried)).toEqual([[['a', ['1', '2']]]]);
    });
  });

  describe('when many callers publish to a few keys', () => {
    it('sends every key in the order of the calls', async () => {
      const broker = fakeBroker(() => settle().then(() => undefined));
      const batcher = batcherOver(broker.send, { maxMessages: 7 });
      const calls: Promise<void>[] = [];
      for (let n = 0; n < 200; n += 2) {
        calls.push(batcher.publish('t', [msg(String(n), `key-${n % 5}`), msg(String(n + 1), `key-${(n + 1) % 5}`)]));
        if (n % 6 === 0) await settle();
      }
      await Promise.all(calls);

      expect(broker.requests.length).toBeGreaterThan(1);
      const sent = broker.requests.flatMap((request) => request.batch.flatMap(({ messages }) => messages));
      expect(sent).toHaveLength(200);
      for (let key = 0; key < 5; key++) {
        const sequence = sent.filter((message) => message.key === `key-${key}`).map((message) => Number(message.value));
        expect(sequence).toEqual([...sequence].sort((x, y) => x - y));
      }
    });
  });

  describe('when a request fails with an error that a retry cannot fix', () => {
    it('resends each caller alone, so only the culprit rejects', async () => {
      const tooLarge = new Error('message too large');
      const broker = fakeBroker(async (batch) => {
        if (batch.some(({ messages }) => messages.some((message) => message.value === 'huge'))) throw tooLarge;
      });
      const batcher = batcherOver(broker.send);
      const calls = [batcher.publish('a', [msg('before')]), batcher.publish('b', [msg('huge')]), batcher.publish('a', [msg('after')])];
      const outcomes = await Promise.allSettled(calls);

      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      const failure = (outcomes[1] as PromiseRejectedResult).reason;
      expect(failure).toBeInstanceOf(BusPublishError);
      expect(failure).toMatchObject({ topic: 'b', attempts: 2, cause: tooLarge });
      expect(broker.requests.map(carried)).toEqual([
        [
          ['a', ['before', 'after']],
          ['b', ['huge']],
        ],
        [['a', ['before']]],
        [['b', ['huge']]],
        [['a', ['after']]],
      ]);
    });
  });

  describe('when a request fails with a transient error', () => {
    it('retries the same request until it is acknowledged', async () => {
      let failures = 2;
      const broker = fakeBroker(async () => {
        if (failures-- > 0) throw new Transient('leader not available');
      });
      const batcher = batcherOver(broker.send);
      await Promise.all([batcher.publish('a', [msg('1')]), batcher.publish('b', [msg('2')])]);
      expect(broker.requests.map(carried)).toEqual(
        Array.from({ length: 3 }, () => [
          ['a', ['1']],
          ['b', ['2']],
        ]),
      );
    });

    it('rejects with the last error once the timeout has passed, never dropping silently', async () => {
      const down = new Transient('broker not found');
      const broker = fakeBroker(() => Promise.reject(down));
      const batcher = batcherOver(broker.send, { timeoutMs: 500 });
      const error = await batcher.publish('a', [msg('1')]).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(BusPublishError);
      expect(error).toMatchObject({ code: 'unavailable', topic: 'a', cause: down });
      expect((error as BusPublishError).attempts).toBeGreaterThan(1);
    });
  });

  describe('when the queue outgrows one request', () => {
    it('splits it at the message bound without reordering the calls', async () => {
      const broker = fakeBroker(async () => undefined);
      const batcher = batcherOver(broker.send, { maxMessages: 3 });
      await Promise.all([
        batcher.publish('a', [msg('1'), msg('2')]),
        batcher.publish('a', [msg('3'), msg('4')]),
        batcher.publish('a', [msg('5')]),
      ]);
      expect(broker.requests.map(carried)).toEqual([[['a', ['1', '2']]], [['a', ['3', '4', '5']]]]);
    });

    it('splits it at the byte bound, and still sends a single larger publish alone', async () => {
      const broker = fakeBroker(async () => undefined);
      const batcher = batcherOver(broker.send, { maxBytes: 20 });
      const big = 'x'.repeat(30);
      await Promise.all([
        batcher.publish('a', [msg('small-1')]),
        batcher.publish('a', [msg(big)]),
        batcher.publish('a', [msg('small-2'), msg('small-3')]),
      ]);
      expect(broker.requests.map(carried)).toEqual([[['a', ['small-1']]], [['a', [big]]], [['a', ['small-2', 'small-3']]]]);
    });
  });

  describe('when nothing is published', () => {
    it('sends no request', async () => {
      const broker = fakeBroker(async () => undefined);
      await batcherOver(broker.send).publish('a', []);
      await settle();
      expect(broker.requests).toHaveLength(0);
    });
  });

  describe('when it is closed with publishes queued', () => {
    it('still sends them, stops retrying, and refuses new publishes', async () => {
      const broker = fakeBroker();
      const batcher = batcherOver(broker.send);
      const inFlight = batcher.publish('a', [msg('in-flight')]).then(
        () => 'acknowledged',
        (error: unknown) => error,
      );
      const request = await broker.request(0);
      const queued = batcher.publish('a', [msg('queued')]);
      const closed = batcher.close();
      await expect(batcher.publish('a', [msg('late')])).rejects.toBeInstanceOf(InvalidStateError);

      request.fail(new Transient('connection closed'));
      expect(await inFlight).toBeInstanceOf(BusPublishError);
      (await broker.request(1)).ack();
      await queued;
      await closed;
      expect(broker.requests.map(carried)).toEqual([[['a', ['in-flight']]], [['a', ['queued']]]]);
    });
  });
});
