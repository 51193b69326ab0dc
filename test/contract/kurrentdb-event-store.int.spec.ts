import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnavailableError, ValidationFailedError, WrongExpectedRevisionError } from '../../src/core/errors.js';
import type { Position } from '../../src/core/event-store.port.js';
import {
  KurrentDbEventStore,
  type KurrentDbEventStoreOptions,
  type KurrentDbSubscribeOptions,
} from '../../src/event-store/kurrentdb/kurrentdb-event-store.js';
import { KurrentDbDouble, type KurrentDbDoubleOptions } from '../support/kurrentdb-double/kurrentdb-double.js';
import { eventually } from '../support/eventually.js';
import { newEvent, recordSubscription, uniquePrefix, type EventStoreFixture } from './event-store-contract.support.js';
import { eventStoreContract } from './event-store.contract.js';

// KurrentDB keeps event ids unique per stream (a replay is answered idempotently), not across
// streams: the contract's two cross-stream duplicate clauses cannot hold for it until the
// contract takes the adapter's capabilities (globallyUniqueEventIds: false).
function fixtureFor(url: string, dispose?: () => Promise<void>): EventStoreFixture {
  return { open: async () => KurrentDbEventStore.connect(url), dispose };
}

eventStoreContract(
  'KurrentDB over the gRPC double',
  async () => {
    const double = await KurrentDbDouble.start();
    return fixtureFor(double.url, () => double.stop());
  },
  { globallyUniqueEventIds: false },
);

// The same contract against a real KurrentDB server, where one is available: set KURRENTDB_URL
// (for example esdb://127.0.0.1:2113?tls=false; docs/operations.md). CI has no KurrentDB server
// and runs the contract on the gRPC double above.
const realServer = process.env.KURRENTDB_URL?.trim();
if (realServer) {
  eventStoreContract('KurrentDB at KURRENTDB_URL', async () => fixtureFor(realServer), { globallyUniqueEventIds: false });
}

/** A double and a store on it, for the adapter's own promises below. */
function onDouble(doubleOptions: KurrentDbDoubleOptions = {}, storeOptions: KurrentDbEventStoreOptions = {}) {
  const context = {} as { double: KurrentDbDouble; store: KurrentDbEventStore };
  beforeAll(async () => {
    context.double = await KurrentDbDouble.start(doubleOptions);
    context.store = KurrentDbEventStore.connect(context.double.url, storeOptions);
  });
  afterAll(async () => {
    await context.store?.close();
    await context.double?.stop();
  });
  return context;
}

describe('KurrentDB event store', () => {
  describe('when positions are issued', () => {
    // Positions cross from 6 to 7 digits within the test: string order must still be log order.
    const given = onDouble({ firstPosition: 999_000n });

    it('encodes commit and prepare positions zero-padded, so string order is log order', async () => {
      const prefix = uniquePrefix();
      const results = [];
      for (let n = 0; n < 12; n++) {
        results.push(
          await given.store.appendToStream(`${prefix}${n % 3}`, [newEvent('Counted', { n, pad: 'x'.repeat(200) })], {
            expectedRevision: 'any',
          }),
        );
      }
      const positions = results.map((result) => result.position);
      expect(positions.every((position) => /^\d{20}-\d{20}$/.test(position))).toBe(true);
      expect(positions[0] < '00000000000001000000').toBe(true);
      expect(positions[11] > '00000000000001000000').toBe(true);
      expect([...positions].sort()).toEqual(positions);
      const log = await given.store.readAll({ after: null, maxCount: 100, streamPrefixes: [prefix] });
      expect(log.map((event) => event.position)).toEqual(positions);
      expect(await given.store.headPosition()).toBe(positions[11]);
    });
  });

  describe('when an append is larger than the server accepts', () => {
    const given = onDouble({ maxAppendSize: 4_096 }, { maxAppendSize: 4_096 });

    it('refuses it with a validation error before sending anything', async () => {
      const streamId = `${uniquePrefix()}1`;
      const before = given.double.stats.appendRequests;
      const attempt = given.store.appendToStream(streamId, [newEvent('Big', { blob: 'x'.repeat(5_000) })], { expectedRevision: 'any' });
      await expect(attempt).rejects.toBeInstanceOf(ValidationFailedError);
      await expect(attempt).rejects.toThrow(/limit of 4096 bytes/);
      expect(given.double.stats.appendRequests).toBe(before);
      expect(await given.store.readStream(streamId)).toEqual([]);
    });

    it('maps the server refusing an append it was configured to send to the same validation error', async () => {
      const lenient = KurrentDbEventStore.connect(given.double.url, { maxAppendSize: 1024 * 1024 });
      try {
        const attempt = lenient.appendToStream(`${uniquePrefix()}1`, [newEvent('Big', { blob: 'x'.repeat(5_000) })], {
          expectedRevision: 'any',
        });
        await expect(attempt).rejects.toBeInstanceOf(ValidationFailedError);
      } finally {
        await lenient.close();
      }
    });
  });

  describe('when an acknowledged append is replayed with the same event ids', () => {
    const given = onDouble();

    it('answers the retry with a conflict and keeps one fact', async () => {
      const streamId = `${uniquePrefix()}1`;
      const facts = [newEvent('AttemptScheduled'), newEvent('AttemptClaimed')];
      await given.store.appendToStream(streamId, [newEvent('ExecutionStarted')], { expectedRevision: 'no_stream' });
      await given.store.appendToStream(streamId, facts, { expectedRevision: 0 });
      const retry = given.store.appendToStream(streamId, facts, { expectedRevision: 0 });
      await expect(retry).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(retry).rejects.toMatchObject({ expected: '0', actual: '2' });
      expect((await given.store.readStream(streamId)).map((event) => event.id)).toHaveLength(3);
    });

    it('lets exactly one of concurrent identical appends succeed', async () => {
      const streamId = `${uniquePrefix()}1`;
      const fact = newEvent('ExecutionStarted');
      const outcomes = await Promise.allSettled(
        Array.from({ length: 6 }, () => given.store.appendToStream(streamId, [fact], { expectedRevision: 'no_stream' })),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
      expect(await given.store.readStream(streamId)).toHaveLength(1);
    });
  });

  describe('when a sparse subscriber restarts', () => {
    // Checkpoints every 32 considered events (multiplier 1 × the search window of 32).
    const given = onDouble({}, { checkpointIntervalMultiplier: 1 });

    it('resumes from the last filter checkpoint instead of rescanning the log', async () => {
      const prefix = uniquePrefix();
      await given.store.appendToStream(`${prefix}wanted`, [newEvent('Wanted')], { expectedRevision: 'no_stream' });
      for (let n = 0; n < 100; n++)
        await given.store.appendToStream(`${uniquePrefix()}noise`, [newEvent('Noise')], { expectedRevision: 'any' });

      const checkpoints: Position[] = [];
      const options: Omit<KurrentDbSubscribeOptions, 'signal'> = {
        streamPrefixes: [prefix],
        onCheckpoint: (position) => void checkpoints.push(position),
      };
      const first = recordSubscription(given.store, options);
      await first.waitFor(1);
      await eventually(async () => checkpoints.length > 0 && !(checkpoints[checkpoints.length - 1] < (await given.store.headPosition())!), {
        what: 'a filter checkpoint at the head',
        intervalMs: 5,
      });
      await first.stop();
      await eventually(() => given.double.liveSubscriptions === 0, { what: 'the cancellation to reach the server', intervalMs: 5 });
      expect(checkpoints.length).toBeGreaterThanOrEqual(3);
      expect([...checkpoints].sort()).toEqual(checkpoints);
      expect(checkpoints[0] > first.events[0].position).toBe(true);

      const considered = given.double.stats.eventsConsidered;
      const resumed = recordSubscription(given.store, { after: checkpoints[checkpoints.length - 1], streamPrefixes: [prefix] });
      await given.store.appendToStream(`${prefix}wanted`, [newEvent('WantedAgain')], { expectedRevision: 0 });
      const [again] = await resumed.waitFor(1);
      await resumed.stop();
      expect(again.type).toBe('WantedAgain');
      expect(given.double.stats.eventsConsidered - considered).toBe(1);
    });
  });

  describe('when the server drops a subscription', () => {
    const given = onDouble();

    it('ends the subscription with UnavailableError instead of waiting forever', async () => {
      const prefix = uniquePrefix();
      await given.store.appendToStream(`${prefix}1`, [newEvent()], { expectedRevision: 'no_stream' });
      const subscription = recordSubscription(given.store, { streamPrefixes: [prefix] });
      await subscription.waitFor(1);
      given.double.failSubscriptions();
      await expect(subscription.ended).rejects.toBeInstanceOf(UnavailableError);
    });
  });

  describe('when the server does not offer batch appends', () => {
    const given = onDouble({ batchAppend: false, maxAppendSize: 4_096 }, { maxAppendSize: 1024 * 1024 });

    it('appends through Streams.Append with the same conflicts and limits', async () => {
      const streamId = `${uniquePrefix()}1`;
      const result = await given.store.appendToStream(streamId, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      expect(result.nextRevision).toBe(1);
      await expect(given.store.appendToStream(streamId, [newEvent()], { expectedRevision: 0 })).rejects.toMatchObject({
        expected: '0',
        actual: '1',
      });
      const big = given.store.appendToStream(streamId, [newEvent('Big', { blob: 'x'.repeat(5_000) })], { expectedRevision: 1 });
      await expect(big).rejects.toBeInstanceOf(ValidationFailedError);
    });
  });

  describe('when it is configured', () => {
    const given = onDouble();

    it('accepts kurrentdb:// connection strings', async () => {
      const store = KurrentDbEventStore.connect(given.double.url.replace('esdb://', 'kurrentdb://'));
      try {
        const streamId = `${uniquePrefix()}1`;
        await store.appendToStream(streamId, [newEvent()], { expectedRevision: 'no_stream' });
        expect(await store.readStream(streamId)).toHaveLength(1);
      } finally {
        await store.close();
      }
    });

    it('rejects metadata that uses the key it reserves for itself', async () => {
      const attempt = given.store.appendToStream(`${uniquePrefix()}1`, [newEvent('X', {}, { '$flostra.appendId': 'mine' })], {
        expectedRevision: 'any',
      });
      await expect(attempt).rejects.toBeInstanceOf(ValidationFailedError);
    });
  });
});
