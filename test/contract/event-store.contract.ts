import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ValidationFailedError, WrongExpectedRevisionError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import {
  expectConflict,
  newEvent,
  uniquePrefix,
  type ContractContext,
  type EventStoreCapabilities,
  type EventStoreFixture,
} from './event-store-contract.support.js';
import { subscriptionContract } from './event-store-subscription.contract.js';
import { taskWorkflowAppendsContract } from './task-workflow-appends.contract.js';

export type { EventStoreCapabilities, EventStoreFixture } from './event-store-contract.support.js';

/**
 * The behaviour every EventStore adapter must show (Postgres over pg and PGlite, KurrentDB).
 * Tests share one log, so each one works in its own streams and reads the global log through
 * its own stream prefix.
 */
export function eventStoreContract(name: string, setup: () => Promise<EventStoreFixture>, capabilities: EventStoreCapabilities = {}): void {
  const globallyUniqueEventIds = capabilities.globallyUniqueEventIds ?? true;
  describe(`${name}: event store contract`, () => {
    let fixture: EventStoreFixture;
    let store: EventStore;
    let other: EventStore;
    const context: ContractContext = { store: () => store, otherStore: () => other };

    beforeAll(async () => {
      fixture = await setup();
      store = await fixture.open();
      other = await fixture.open();
    });

    afterAll(async () => {
      await store?.close();
      await other?.close();
      await fixture?.dispose?.();
    });

    describe('when events are appended to a stream', () => {
      it('reads them back in revision order with type, data and metadata intact', async () => {
        const streamId = `${uniquePrefix()}1`;
        const events = [
          newEvent('OrderPlaced', { total: 12.5, lines: [{ sku: 'a', qty: 2 }], note: 'naïve ☃' }, { actor: 'alice' }),
          newEvent('OrderPaid', { paid: true, at: null }),
        ];
        const result = await store.appendToStream(streamId, events, { expectedRevision: 'no_stream' });
        const read = await store.readStream(streamId);
        expect(read.map(({ id, type, streamId: s, revision, data, metadata }) => ({ id, type, s, revision, data, metadata }))).toEqual([
          { id: events[0].id, type: 'OrderPlaced', s: streamId, revision: 0, data: events[0].data, metadata: { actor: 'alice' } },
          { id: events[1].id, type: 'OrderPaid', s: streamId, revision: 1, data: events[1].data, metadata: {} },
        ]);
        expect(result).toEqual({ nextRevision: 1, position: read[1].position });
        expect(new Date(read[0].recordedAt).toISOString()).toBe(read[0].recordedAt);
      });

      it('reads a stream that does not exist as empty', async () => {
        expect(await store.readStream(`${uniquePrefix()}missing`)).toEqual([]);
      });

      it('reads from a revision, at most maxCount events', async () => {
        const streamId = `${uniquePrefix()}1`;
        await store.appendToStream(
          streamId,
          [0, 1, 2, 3].map((n) => newEvent('Counted', { n })),
          { expectedRevision: 'no_stream' },
        );
        const read = await store.readStream(streamId, { fromRevision: 1, maxCount: 2 });
        expect(read.map((event) => [event.revision, event.data])).toEqual([
          [1, { n: 1 }],
          [2, { n: 2 }],
        ]);
      });

      it('reads several streams at once exactly as the log and one-by-one reads give them', async () => {
        const prefix = uniquePrefix();
        // Names, types and data that need escaping in JSON, and a stream without events.
        const streamIds = [`${prefix}a"q\\b`, `${prefix}ü-ß`, `${prefix}plain`];
        for (const [index, streamId] of streamIds.entries()) {
          await store.appendToStream(
            streamId,
            [
              newEvent('Typed "quoted" \\ ☃', { n: index, text: 'line\nbreak\t"x"', nested: [null, { deep: 1.25 }] }, { actor: 'ü' }),
              newEvent('Plain', null),
              newEvent('Plain', { n: index, big: 9007199254740991 }),
            ],
            { expectedRevision: 'no_stream' },
          );
        }
        const missing = `${prefix}missing`;
        const fromLog = await store.readAll({ maxCount: 100, streamPrefixes: [prefix] });
        const alone = [];
        for (const streamId of streamIds) alone.push(await store.readStream(streamId));
        expect(alone.flat()).toEqual(fromLog);
        // Concurrent reads go together in one statement in a store that batches them.
        const together = await Promise.all([...streamIds, missing].map((streamId) => store.readStream(streamId)));
        expect(together).toEqual([...alone, []]);
        const parts = await Promise.all(streamIds.map((streamId) => store.readStream(streamId, { fromRevision: 1, maxCount: 1 })));
        expect(parts).toEqual(alone.map((events) => [events[1]]));
        if (store.readStreams !== undefined) {
          const streams = await store.readStreams([...streamIds, missing, streamIds[0]]);
          expect([...streams.keys()].sort()).toEqual([...streamIds].sort());
          for (const [index, streamId] of streamIds.entries()) expect(streams.get(streamId)).toEqual(alone[index]);
        }
      });
    });

    describe('when the expected revision is checked', () => {
      it("appends with 'no_stream' to a new stream and rejects it on an existing one", async () => {
        const streamId = `${uniquePrefix()}1`;
        await store.appendToStream(streamId, [newEvent()], { expectedRevision: 'no_stream' });
        await expectConflict(store.appendToStream(streamId, [newEvent()], { expectedRevision: 'no_stream' }), 'no_stream', '0');
      });

      it("appends with 'stream_exists' to an existing stream and rejects it on a missing one", async () => {
        const streamId = `${uniquePrefix()}1`;
        await expectConflict(
          store.appendToStream(streamId, [newEvent()], { expectedRevision: 'stream_exists' }),
          'stream_exists',
          'no_stream',
        );
        await store.appendToStream(streamId, [newEvent()], { expectedRevision: 'any' });
        expect(await store.appendToStream(streamId, [newEvent()], { expectedRevision: 'stream_exists' })).toMatchObject({
          nextRevision: 1,
        });
      });

      it('appends at the exact last revision and rejects a stale or missing one', async () => {
        const streamId = `${uniquePrefix()}1`;
        await expectConflict(store.appendToStream(streamId, [newEvent()], { expectedRevision: 0 }), '0', 'no_stream');
        await store.appendToStream(streamId, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        expect(await store.appendToStream(streamId, [newEvent()], { expectedRevision: 1 })).toMatchObject({ nextRevision: 2 });
        await expectConflict(store.appendToStream(streamId, [newEvent()], { expectedRevision: 1 }), '1', '2');
        expect((await store.readStream(streamId)).length).toBe(3);
      });

      it("appends with 'any' whatever the stream holds", async () => {
        const streamId = `${uniquePrefix()}1`;
        expect(await store.appendToStream(streamId, [newEvent()], { expectedRevision: 'any' })).toMatchObject({ nextRevision: 0 });
        expect(await store.appendToStream(streamId, [newEvent()], { expectedRevision: 'any' })).toMatchObject({ nextRevision: 1 });
      });

      it('lets exactly one of many concurrent appends at the same revision win', async () => {
        const streamId = `${uniquePrefix()}1`;
        await store.appendToStream(streamId, [newEvent()], { expectedRevision: 'no_stream' });
        const outcomes = await Promise.allSettled(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 === 0 ? store : other).appendToStream(streamId, [newEvent()], { expectedRevision: 0 }),
          ),
        );
        expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
        for (const outcome of outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected')) {
          expect(outcome.reason).toBeInstanceOf(WrongExpectedRevisionError);
          expect(outcome.reason).toMatchObject({ expected: '0', actual: '1' });
        }
        expect((await store.readStream(streamId)).length).toBe(2);
      });

      it("lets exactly one of many concurrent first appends with 'no_stream' win", async () => {
        const streamId = `${uniquePrefix()}1`;
        const outcomes = await Promise.allSettled(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 === 0 ? store : other).appendToStream(streamId, [newEvent()], { expectedRevision: 'no_stream' }),
          ),
        );
        expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
        for (const outcome of outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected')) {
          expect(outcome.reason).toBeInstanceOf(WrongExpectedRevisionError);
          expect(outcome.reason).toMatchObject({ expected: 'no_stream', actual: '0' });
        }
        expect((await store.readStream(streamId)).length).toBe(1);
      });
    });

    describe('when an append cannot be applied', () => {
      it('rejects an event id that already exists as a conflict, even with any revision', async () => {
        const prefix = uniquePrefix();
        const fact = newEvent('AttemptScheduled');
        await store.appendToStream(`${prefix}1`, [fact], { expectedRevision: 'no_stream' });
        await expectConflict(store.appendToStream(`${prefix}1`, [fact], { expectedRevision: 'any' }), 'any', '0');
        if (globallyUniqueEventIds) {
          await expectConflict(store.appendToStream(`${prefix}2`, [fact], { expectedRevision: 'any' }), 'any', 'no_stream');
        }
        expect((await store.readStream(`${prefix}1`)).length).toBe(1);
      });

      // Needs a mid-batch failure, which only a store with ids unique across streams can produce
      // (KurrentDB checks ids per stream: the case does not arise there, so it is not defined).
      if (globallyUniqueEventIds)
        it('writes nothing of a multi-event append that fails', async () => {
          const prefix = uniquePrefix();
          const existing = newEvent();
          await store.appendToStream(`${prefix}other`, [existing], { expectedRevision: 'no_stream' });
          const head = await store.headPosition();
          const batch = [newEvent(), newEvent(), { ...existing }];
          await expectConflict(store.appendToStream(`${prefix}1`, batch, { expectedRevision: 'no_stream' }), 'no_stream', 'no_stream');
          expect(await store.readStream(`${prefix}1`)).toEqual([]);
          expect(await store.readAll({ after: head, maxCount: 10, streamPrefixes: [prefix] })).toEqual([]);
          // Not even the stream was created: the first append can still claim it.
          expect(await store.appendToStream(`${prefix}1`, batch.slice(0, 2), { expectedRevision: 'no_stream' })).toMatchObject({
            nextRevision: 1,
          });
        });

      it('rejects malformed input with a validation error and writes nothing', async () => {
        const streamId = `${uniquePrefix()}1`;
        const attempts = [
          store.appendToStream('', [newEvent()], { expectedRevision: 'any' }),
          store.appendToStream(streamId, [], { expectedRevision: 'any' }),
          store.appendToStream(streamId, [{ ...newEvent(), id: 'not-a-uuid' }], { expectedRevision: 'any' }),
          store.appendToStream(streamId, [newEvent()], { expectedRevision: -1 }),
        ];
        for (const attempt of attempts) await expect(attempt).rejects.toBeInstanceOf(ValidationFailedError);
        expect(await store.readStream(streamId)).toEqual([]);
      });
    });

    describe('when the global log is read', () => {
      it('returns events in append order after a cursor, page by page', async () => {
        const prefix = uniquePrefix();
        const head = await store.headPosition();
        const appended = [];
        for (const [stream, n] of [
          ['a', 0],
          ['b', 1],
          ['a', 2],
          ['c', 3],
          ['b', 4],
        ] as const) {
          const event = newEvent('Counted', { n });
          await store.appendToStream(`${prefix}${stream}`, [event], { expectedRevision: 'any' });
          appended.push(event.id);
        }
        const all = await store.readAll({ after: head, maxCount: 100, streamPrefixes: [prefix] });
        expect(all.map((event) => event.id)).toEqual(appended);
        const paged = [];
        let cursor = head;
        for (let page = await store.readAll({ after: cursor, maxCount: 2, streamPrefixes: [prefix] }); page.length > 0;) {
          expect(page.length).toBeLessThanOrEqual(2);
          paged.push(...page);
          cursor = page[page.length - 1].position;
          page = await store.readAll({ after: cursor, maxCount: 2, streamPrefixes: [prefix] });
        }
        expect(paged).toEqual(all);
        expect(await store.readAll({ after: all[2].position, maxCount: 100, streamPrefixes: [prefix] })).toEqual(all.slice(3));
      });

      it('returns only streams that start with one of the prefixes', async () => {
        const prefix = uniquePrefix();
        const head = await store.headPosition();
        for (const stream of ['execution-1', 'workflow-1', 'execution-2', 'other-1']) {
          await store.appendToStream(`${prefix}${stream}`, [newEvent()], { expectedRevision: 'no_stream' });
        }
        const read = await store.readAll({ after: head, maxCount: 100, streamPrefixes: [`${prefix}execution-`, `${prefix}other-`] });
        expect(read.map((event) => event.streamId)).toEqual([`${prefix}execution-1`, `${prefix}execution-2`, `${prefix}other-1`]);
      });

      it('moves the head position to the last appended event', async () => {
        const prefix = uniquePrefix();
        const result = await store.appendToStream(`${prefix}1`, [newEvent()], { expectedRevision: 'no_stream' });
        const head = await store.headPosition();
        expect(head).not.toBeNull();
        expect(await store.readAll({ after: head, maxCount: 10, streamPrefixes: [prefix] })).toEqual([]);
        const [event] = await store.readStream(`${prefix}1`);
        expect(event.position).toBe(result.position);
      });

      it('rejects a cursor it did not issue with a validation error', async () => {
        for (const after of ['not-a-position', '', '1-2-3', '-1-1', '99999999999999999999999-1']) {
          await expect(store.readAll({ after, maxCount: 1 })).rejects.toBeInstanceOf(ValidationFailedError);
        }
      });
    });

    describe('when a client hands a position back', () => {
      it('recognizes the positions it hands out, and nothing else', async () => {
        const prefix = uniquePrefix();
        const result = await store.appendToStream(`${prefix}1`, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        const [first] = await store.readStream(`${prefix}1`);
        const head = await store.headPosition();
        for (const position of [result.position, first.position, head!]) expect(store.isPosition(position)).toBe(true);
        const position = result.position;
        const notPositions = [
          'garbage',
          'zzz',
          '',
          `${position}0`, // one digit more: the other store's format, or none
          position.slice(1),
          position.replace('-', ':'),
          `99999999999999999999${position.slice(20)}`, // out of range
          ` ${position}`,
        ];
        for (const text of notPositions) expect([text, store.isPosition(text)]).toEqual([text, false]);
      });

      it('tells a position beyond the last committed event from one the log has reached', async () => {
        const prefix = uniquePrefix();
        const result = await store.appendToStream(`${prefix}1`, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        const [first] = await store.readStream(`${prefix}1`);
        expect(await store.isAheadOfLog(result.position)).toBe(false);
        expect(await store.isAheadOfLog(first.position)).toBe(false);
        expect(await other.isAheadOfLog(result.position)).toBe(false);
        // Well-formed and behind the head, though no event's: not ahead.
        const [major, minor] = result.position.split('-');
        expect(await store.isAheadOfLog(`${'0'.repeat(major.length)}-${'1'.padStart(minor.length, '0')}`)).toBe(false);
        // Positions of both stores start with 20 digits; 10^19 is within range and far beyond any log here.
        const beyond = `1${'0'.repeat(19)}-${minor}`;
        expect(store.isPosition(beyond)).toBe(true);
        expect(await store.isAheadOfLog(beyond)).toBe(true);
      });

      it('rejects a malformed position with a validation error', async () => {
        await expect(store.isAheadOfLog('garbage')).rejects.toBeInstanceOf(ValidationFailedError);
      });
    });

    describe('when a stream is deleted (retention)', () => {
      it('deletes it at its revision; its positions stay within the log and are never handed out again', async () => {
        const prefix = uniquePrefix();
        const deleted = await store.appendToStream(`${prefix}1`, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        // The deleted events are the log's last: a position handed out for them must not look ahead.
        await store.deleteStream(`${prefix}1`, { expectedRevision: 1 });
        expect(await store.readStream(`${prefix}1`)).toEqual([]);
        expect(await store.isAheadOfLog(deleted.position)).toBe(false);
        const next = await store.appendToStream(`${prefix}2`, [newEvent()], { expectedRevision: 'no_stream' });
        expect(next.position > deleted.position).toBe(true);
        expect(await store.readStream(`${prefix}1`)).toEqual([]);
      });

      it('refuses a revision the stream has moved past, and keeps the stream', async () => {
        const prefix = uniquePrefix();
        await store.appendToStream(`${prefix}1`, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        await expect(store.deleteStream(`${prefix}1`, { expectedRevision: 0 })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
        expect(await store.readStream(`${prefix}1`)).toHaveLength(2);
      });

      it('leaves a stream without events alone', async () => {
        await expect(store.deleteStream(`${uniquePrefix()}missing`, { expectedRevision: 0 })).resolves.toBeUndefined();
      });
    });

    subscriptionContract(context);
    taskWorkflowAppendsContract(context);
  });
}
