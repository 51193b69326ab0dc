import { describe, expect, it } from '@jest/globals';
import { ValidationFailedError } from '../../src/core/errors.js';
import { sleep } from '../support/eventually.js';
import { newEvent, recordSubscription, uniquePrefix, type ContractContext } from './event-store-contract.support.js';

/** Part of eventStoreContract: catch-up subscriptions to the global log. */
export function subscriptionContract({ store, otherStore }: ContractContext): void {
  describe('when subscribed to the global log', () => {
    it('delivers history then live appends, each once and in order, in bounded batches, until aborted', async () => {
      const prefix = uniquePrefix();
      const head = await store().headPosition();
      for (let n = 0; n < 5; n++) {
        await store().appendToStream(`${prefix}${n % 2}`, [newEvent('Counted', { n })], { expectedRevision: 'any' });
      }
      const subscription = recordSubscription(store(), { after: head, streamPrefixes: [prefix], batchSize: 2 });
      await subscription.waitFor(5);
      for (let n = 5; n < 10; n++) {
        const writer = n % 2 === 0 ? store() : otherStore();
        await writer.appendToStream(`${prefix}${n % 3}`, [newEvent('Counted', { n })], { expectedRevision: 'any' });
      }
      await subscription.waitFor(10);
      await sleep(100); // room for a duplicate to show up
      await subscription.stop();

      const log = await store().readAll({ after: head, maxCount: 100, streamPrefixes: [prefix] });
      expect(log).toHaveLength(10);
      expect(subscription.events).toEqual(log);
      expect(subscription.events.map((event) => (event.data as { n: number }).n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(subscription.batchSizes.every((size) => size >= 1 && size <= 2)).toBe(true);

      await store().appendToStream(`${prefix}0`, [newEvent()], { expectedRevision: 'any' });
      await sleep(50);
      expect(subscription.events).toHaveLength(10);
    });

    it('wakes on an append made through another store instance', async () => {
      const prefix = uniquePrefix();
      const subscription = recordSubscription(store(), { after: await store().headPosition(), streamPrefixes: [prefix] });
      await sleep(50);
      const event = newEvent();
      await otherStore().appendToStream(`${prefix}1`, [event], { expectedRevision: 'no_stream' });
      const [delivered] = await subscription.waitFor(1, 5_000);
      await subscription.stop();
      expect(delivered.id).toBe(event.id);
    });

    it('resumes strictly after the position a reconnecting client last saw', async () => {
      const prefix = uniquePrefix();
      const head = await store().headPosition();
      for (let n = 0; n < 4; n++) await store().appendToStream(`${prefix}1`, [newEvent('Counted', { n })], { expectedRevision: 'any' });
      const log = await store().readAll({ after: head, maxCount: 10, streamPrefixes: [prefix] });
      const subscription = recordSubscription(store(), { after: log[1].position, streamPrefixes: [prefix] });
      await subscription.waitFor(2);
      await sleep(50);
      await subscription.stop();
      expect(subscription.events).toEqual(log.slice(2));
    });

    it('gives every one of many concurrent subscribers each concurrent append exactly once', async () => {
      const prefix = uniquePrefix();
      const head = await store().headPosition();
      const subscriptions = Array.from({ length: 20 }, (_, i) =>
        recordSubscription(i % 2 === 0 ? store() : otherStore(), { after: head, streamPrefixes: [prefix], batchSize: 7 }),
      );
      await Promise.all(
        [0, 1, 2].map(async (writer) => {
          for (let n = 0; n < 10; n++) {
            await (writer === 1 ? otherStore() : store()).appendToStream(`${prefix}${writer}`, [newEvent()], { expectedRevision: 'any' });
          }
        }),
      );
      const log = await store().readAll({ after: head, maxCount: 100, streamPrefixes: [prefix] });
      expect(log).toHaveLength(30);
      for (const [i, subscription] of subscriptions.entries()) {
        await subscription.waitFor(30).catch((error: unknown) => {
          // Which events never came, in log order, and through which store: a stall or a skip.
          const got = new Set(subscription.events.map((event) => event.id));
          const missing = log.flatMap((event, index) => (got.has(event.id) ? [] : [index]));
          throw new Error(
            `subscriber ${i} (${i % 2 === 0 ? 'store' : 'otherStore'}): ${String(error)}; missing log indexes ${missing.join(',')}`,
          );
        });
      }
      await sleep(100);
      for (const subscription of subscriptions) {
        await subscription.stop();
        expect(subscription.events.map((event) => event.id)).toEqual(log.map((event) => event.id));
      }
    });

    it('ends promptly when aborted while waiting for events', async () => {
      const subscription = recordSubscription(store(), { after: await store().headPosition(), streamPrefixes: [uniquePrefix()] });
      await sleep(50);
      const started = Date.now();
      await subscription.stop();
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(subscription.events).toEqual([]);
    });

    it('delivers nothing when the signal is already aborted', async () => {
      const prefix = uniquePrefix();
      await store().appendToStream(`${prefix}1`, [newEvent()], { expectedRevision: 'no_stream' });
      const batches = [];
      for await (const batch of store().subscribeToAll({ streamPrefixes: [prefix], signal: AbortSignal.abort() })) batches.push(batch);
      expect(batches).toEqual([]);
    });

    it('fails with a validation error for a cursor it did not issue', async () => {
      const iterate = async () => {
        for await (const batch of store().subscribeToAll({ after: 'not-a-position', signal: new AbortController().signal })) {
          expect(batch).toBeUndefined();
        }
      };
      await expect(iterate()).rejects.toBeInstanceOf(ValidationFailedError);
    });
  });
}
