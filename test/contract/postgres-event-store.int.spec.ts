import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { WrongExpectedRevisionError } from '../../src/core/errors.js';
import type { ReadStreamOptions } from '../../src/core/event-store.port.js';
import { PostgresEventStore } from '../../src/event-store/postgres/postgres-event-store.js';
import { comparePositions, decodePosition, encodePosition } from '../../src/event-store/postgres/position.codec.js';
import { PgSqlClient } from '../../src/postgres/pg-sql-client.js';
import { PgliteSqlClient } from '../../src/postgres/pglite-sql-client.js';
import { PgliteThreadSqlClient } from '../../src/postgres/pglite-thread-sql-client.js';
import type { SqlClient } from '../../src/postgres/sql-client.port.js';
import { createTestDatabase } from '../support/postgres-server.js';
import { sleep } from '../support/eventually.js';
import { newEvent, recordSubscription, uniquePrefix } from './event-store-contract.support.js';
import { eventStoreContract } from './event-store.contract.js';

// A poll interval longer than any test: wake-ups must come from appends and NOTIFY, not polling.
const NO_POLLING = { pollIntervalMs: 60_000 };

eventStoreContract('Postgres on PGlite (in memory)', async () => {
  const client = await PgliteSqlClient.open();
  return { open: () => PostgresEventStore.open(client, NO_POLLING), dispose: () => client.close() };
});

eventStoreContract('Postgres on PGlite on a thread of its own', async () => {
  const client = await PgliteThreadSqlClient.open();
  return { open: () => PostgresEventStore.open(client, NO_POLLING), dispose: () => client.close() };
});

eventStoreContract('Postgres on a real server', async () => {
  const url = await createTestDatabase('event_store_contract');
  return { open: () => PostgresEventStore.open(new PgSqlClient({ connectionString: url }), { ...NO_POLLING, closeClient: true }) };
});

/** Calls the append function on a raw connection, as an append inside a held-open transaction. */
async function rawAppend(raw: pg.Client, streamId: string, event: ReturnType<typeof newEvent>): Promise<string> {
  const { rows } = await raw.query('select * from event_store.append($1, $2, $3, $4::jsonb)', [
    streamId,
    'no_stream',
    null,
    JSON.stringify([event]),
  ]);
  return encodePosition({ transactionId: BigInt(rows[0].position_xid), seq: BigInt(rows[0].position_seq) });
}

describe('Postgres event store on a real server', () => {
  let url: string;
  let store: PostgresEventStore;
  let raw: pg.Client;

  beforeAll(async () => {
    url = await createTestDatabase('event_store_pg');
    store = await PostgresEventStore.open(new PgSqlClient({ connectionString: url }), { ...NO_POLLING, closeClient: true });
    raw = new pg.Client({ connectionString: url });
    await raw.connect();
  });

  afterAll(async () => {
    await raw?.end();
    await store?.close();
  });

  describe('when two appends commit out of order', () => {
    it('holds the later commit back until the earlier one commits, then delivers both once, in position order', async () => {
      const prefix = uniquePrefix();
      const head = await store.headPosition();
      const subscription = recordSubscription(store, { after: head, streamPrefixes: [prefix] });
      const first = newEvent('First');
      const second = newEvent('Second');

      await raw.query('begin');
      const firstPosition = await rawAppend(raw, `${prefix}t1`, first);
      const secondAppend = await store.appendToStream(`${prefix}t2`, [second], { expectedRevision: 'no_stream' });
      // T1 drew the lower position but T2 committed first: the sequence-gap situation.
      expect(comparePositions(firstPosition, secondAppend.position)).toBeLessThan(0);

      await sleep(300);
      expect(subscription.events).toEqual([]);
      expect(await store.readAll({ after: head, maxCount: 10, streamPrefixes: [prefix] })).toEqual([]);
      expect(await store.headPosition()).toBe(head);
      // Held back from readers, yet handed out by the append: a client may resume from it.
      expect(await store.isAheadOfLog(secondAppend.position)).toBe(false);

      await raw.query('commit');
      const delivered = await subscription.waitFor(2, 5_000);
      await sleep(100);
      await subscription.stop();
      expect(delivered.map((event) => event.id)).toEqual([first.id, second.id]);
      expect(subscription.events).toHaveLength(2);
      expect(delivered.map((event) => event.position)).toEqual([firstPosition, secondAppend.position]);
      expect(await store.readAll({ after: head, maxCount: 10, streamPrefixes: [prefix] })).toEqual(delivered);
    });
  });

  describe('when an append sends no notification', () => {
    it('is still delivered by the fallback poll', async () => {
      const polling = await PostgresEventStore.open(new PgSqlClient({ connectionString: url }), { pollIntervalMs: 100, closeClient: true });
      try {
        const prefix = uniquePrefix();
        const subscription = recordSubscription(polling, { after: await polling.headPosition(), streamPrefixes: [prefix] });
        await sleep(50);
        const event = newEvent();
        await rawAppend(raw, `${prefix}1`, event);
        const [delivered] = await subscription.waitFor(1, 3_000);
        await subscription.stop();
        expect(delivered.id).toBe(event.id);
      } finally {
        await polling.close();
      }
    });
  });

  describe('when the store fails under a subscription', () => {
    it('ends the subscription with the error instead of waiting forever', async () => {
      const brokenUrl = await createTestDatabase('event_store_broken');
      const broken = await PostgresEventStore.open(new PgSqlClient({ connectionString: brokenUrl }), {
        pollIntervalMs: 50,
        closeClient: true,
      });
      const admin = new pg.Client({ connectionString: brokenUrl });
      await admin.connect();
      try {
        await broken.appendToStream('s-1', [newEvent()], { expectedRevision: 'no_stream' });
        const subscription = recordSubscription(broken, {});
        await subscription.waitFor(1);
        await admin.query('alter table event_store.events rename to events_gone');
        await expect(subscription.ended).rejects.toMatchObject({ code: '42P01' });
      } finally {
        await admin.end();
        await broken.close();
      }
    });
  });
});

describe.each([
  ['PGlite', async () => ({ client: await PgliteSqlClient.open() })],
  ['PGlite on a thread of its own', async () => ({ client: await PgliteThreadSqlClient.open() })],
  ['a real server', async () => ({ client: new PgSqlClient({ connectionString: await createTestDatabase('event_store_batches') }) })],
])('Postgres event store appends made together, on %s', (_name, open) => {
  let client: SqlClient;
  let store: PostgresEventStore;

  beforeAll(async () => {
    ({ client } = await open());
    store = await PostgresEventStore.open(client, NO_POLLING);
  });

  afterAll(async () => {
    await store?.close();
    await client?.close();
  });

  /** Transactions that wrote the events of `streams` (the first half of each position's transaction id). */
  async function transactionsOf(streams: string[]): Promise<number> {
    const { rows } = await client.query<{ n: string | number }>(
      'select count(distinct transaction_id::text) as n from event_store.events where stream_id = any($1::text[])',
      [streams],
    );
    return Number(rows[0].n);
  }

  it('commit together, each on its own stream with its own revision and position', async () => {
    const prefix = uniquePrefix();
    const streams = Array.from({ length: 20 }, (_, i) => `${prefix}s${i}`);
    const results = await Promise.all(
      streams.map((stream) => store.appendToStream(stream, [newEvent(), newEvent()], { expectedRevision: 'no_stream' })),
    );
    expect(results.map((r) => r.nextRevision)).toEqual(Array(20).fill(1));
    expect(new Set(results.map((r) => r.position)).size).toBe(20);
    // The first went alone; the others waited for it and shared a commit.
    expect(await transactionsOf(streams)).toBeLessThan(20);
    for (const [i, stream] of streams.entries()) {
      const read = await store.readStream(stream);
      expect(read.map((e) => e.revision)).toEqual([0, 1]);
      expect(read[1].position).toBe(results[i].position);
    }
  });

  it('answer a conflict to its own append only: the others are appended', async () => {
    const prefix = uniquePrefix();
    await store.appendToStream(`${prefix}taken`, [newEvent()], { expectedRevision: 'no_stream' });
    const attempts = await Promise.allSettled([
      store.appendToStream(`${prefix}a`, [newEvent()], { expectedRevision: 'no_stream' }),
      store.appendToStream(`${prefix}taken`, [newEvent()], { expectedRevision: 'no_stream' }),
      store.appendToStream(`${prefix}b`, [newEvent()], { expectedRevision: 'no_stream' }),
      store.appendToStream(`${prefix}taken`, [newEvent()], { expectedRevision: 5 }),
    ]);
    expect(attempts.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    for (const rejected of [attempts[1], attempts[3]]) {
      expect((rejected as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
      expect((rejected as PromiseRejectedResult).reason).toMatchObject({ actual: '0' });
    }
    expect(await store.readStream(`${prefix}a`)).toHaveLength(1);
    expect(await store.readStream(`${prefix}b`)).toHaveLength(1);
    expect(await store.readStream(`${prefix}taken`)).toHaveLength(1);
  });

  it('answer each append of a batch on streams of its own as when alone, whatever revision it expected', async () => {
    const prefix = uniquePrefix();
    await store.appendToStream(`${prefix}old`, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
    await store.appendToStream(`${prefix}stale`, [newEvent()], { expectedRevision: 'no_stream' });
    await store.appendToStream(`${prefix}taken`, [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
    const attempts = await Promise.allSettled([
      store.appendToStream(`${prefix}first-alone`, [newEvent()], { expectedRevision: 'no_stream' }),
      store.appendToStream(`${prefix}old`, [newEvent('Third'), newEvent('Fourth')], { expectedRevision: 1 }),
      store.appendToStream(`${prefix}stale`, [newEvent()], { expectedRevision: 4 }),
      store.appendToStream(`${prefix}missing`, [newEvent()], { expectedRevision: 0 }),
      store.appendToStream(`${prefix}new`, [newEvent('Born'), newEvent('Grown')], { expectedRevision: 'no_stream' }),
      store.appendToStream(`${prefix}taken`, [newEvent()], { expectedRevision: 'no_stream' }),
    ]);
    expect(attempts.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled', 'rejected']);
    const actual = (attempt: PromiseSettledResult<unknown>) => (attempt as PromiseRejectedResult).reason as WrongExpectedRevisionError;
    expect([actual(attempts[2]), actual(attempts[3]), actual(attempts[5])].map((e) => e.actual)).toEqual(['0', 'no_stream', '2']);
    const [old, born] = [attempts[1], attempts[4]].map(
      (a) => (a as PromiseFulfilledResult<{ nextRevision: number; position: string }>).value,
    );
    expect([old.nextRevision, born.nextRevision]).toEqual([3, 1]);
    // The five after the first went as one batch: the two that won share its transaction.
    expect(decodePosition(old.position).transactionId).toBe(decodePosition(born.position).transactionId);
    const oldRead = await store.readStream(`${prefix}old`);
    expect(oldRead.map((e) => [e.revision, e.type])).toEqual([
      [0, 'SomethingHappened'],
      [1, 'SomethingHappened'],
      [2, 'Third'],
      [3, 'Fourth'],
    ]);
    expect(oldRead[3].position).toBe(old.position);
    const bornRead = await store.readStream(`${prefix}new`);
    expect(bornRead.map((e) => [e.revision, e.type])).toEqual([
      [0, 'Born'],
      [1, 'Grown'],
    ]);
    expect(bornRead[1].position).toBe(born.position);
    expect(comparePositions(bornRead[0].position, bornRead[1].position)).toBeLessThan(0);
    expect(await store.readStream(`${prefix}stale`)).toHaveLength(1);
    expect(await store.readStream(`${prefix}missing`)).toHaveLength(0);
    expect(await store.readStream(`${prefix}taken`)).toHaveLength(3);
  });

  it('fail a fact recorded before (a duplicate event id) alone, and append the rest', async () => {
    const prefix = uniquePrefix();
    const fact = newEvent('Recorded');
    await store.appendToStream(`${prefix}fact`, [fact], { expectedRevision: 'no_stream' });
    const attempts = await Promise.allSettled([
      store.appendToStream(`${prefix}a`, [newEvent()], { expectedRevision: 'no_stream' }),
      store.appendToStream(`${prefix}fact`, [fact], { expectedRevision: 'any' }),
      store.appendToStream(`${prefix}b`, [newEvent()], { expectedRevision: 'no_stream' }),
      store.appendToStream(`${prefix}c`, [newEvent()], { expectedRevision: 'no_stream' }),
    ]);
    expect(attempts.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((attempts[1] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
    expect((await store.readStream(`${prefix}fact`)).map((e) => e.id)).toEqual([fact.id]);
    for (const stream of ['a', 'b', 'c']) expect(await store.readStream(`${prefix}${stream}`)).toHaveLength(1);
  });

  it('share statements between stream reads requested together, each answered as when alone', async () => {
    let statements = 0;
    const counting = new Proxy(client, {
      get(target, property) {
        if (property === 'query') return (...args: Parameters<SqlClient['query']>) => ((statements += 1), target.query(...args));
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const reader = await PostgresEventStore.open(counting, NO_POLLING);
    const prefix = uniquePrefix();
    const streams = Array.from({ length: 12 }, (_, i) => `${prefix}r${i}`);
    for (const [i, stream] of streams.entries()) {
      await store.appendToStream(
        stream,
        Array.from({ length: 1 + (i % 4) }, () => newEvent()),
        { expectedRevision: 'no_stream' },
      );
    }
    const reads: [string, ReadStreamOptions][] = [
      ...streams.flatMap((stream): [string, ReadStreamOptions][] => [
        [stream, {}],
        [stream, { fromRevision: 1 }],
        [stream, { maxCount: 2 }],
      ]),
      [`${prefix}missing`, {}],
    ];
    const alone = [];
    for (const [stream, options] of reads) alone.push(await reader.readStream(stream, options));
    const before = statements;
    const together = await Promise.all(reads.map(([stream, options]) => reader.readStream(stream, options)));
    expect(together).toEqual(alone);
    expect(statements - before).toBeLessThan(reads.length / 4);
    await reader.close();
  });

  it('read back together: each stream whole and in order, as read alone; none for a stream without events', async () => {
    const prefix = uniquePrefix();
    const streams = [`${prefix}a`, `${prefix}b`, `${prefix}c`];
    await store.appendToStream(streams[0], [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
    await store.appendToStream(streams[1], [newEvent()], { expectedRevision: 'no_stream' });
    await store.appendToStream(streams[0], [newEvent()], { expectedRevision: 2 });

    const read = await store.readStreams([...streams, streams[1]]);

    expect([...read.keys()].sort()).toEqual(streams.slice(0, 2));
    expect(read.get(streams[0])).toEqual(await store.readStream(streams[0]));
    expect(read.get(streams[0])?.map((e) => e.revision)).toEqual([0, 1, 2, 3]);
    expect(read.get(streams[1])).toEqual(await store.readStream(streams[1]));
    expect((await store.readStreams([])).size).toBe(0);
  });

  it('apply appends to one stream in the order they were made', async () => {
    const prefix = uniquePrefix();
    const stream = `${prefix}ordered`;
    await store.appendToStream(`${prefix}first-alone`, [newEvent()], { expectedRevision: 'no_stream' });
    const [one, two, three] = await Promise.all([
      store.appendToStream(stream, [newEvent('One')], { expectedRevision: 'no_stream' }),
      store.appendToStream(stream, [newEvent('Two')], { expectedRevision: 0 }),
      store.appendToStream(stream, [newEvent('Three')], { expectedRevision: 1 }),
    ]);
    expect([one.nextRevision, two.nextRevision, three.nextRevision]).toEqual([0, 1, 2]);
    expect((await store.readStream(stream)).map((e) => e.type)).toEqual(['One', 'Two', 'Three']);
  });
});

describe('Postgres event stores of two processes appending to the same streams in opposite orders', () => {
  /** Two stores, each on a connection pool of its own, over one new database: two processes. */
  async function withTwoProcesses(database: string, run: (stores: PostgresEventStore[]) => Promise<void>): Promise<void> {
    const url = await createTestDatabase(database);
    const clients = [new PgSqlClient({ connectionString: url }), new PgSqlClient({ connectionString: url })];
    const stores = await Promise.all(clients.map((client) => PostgresEventStore.open(client, NO_POLLING)));
    try {
      await run(stores);
    } finally {
      for (const store of stores) await store.close();
      for (const client of clients) await client.close();
    }
  }

  it('never deadlock: every append commits', async () => {
    await withTwoProcesses('event_store_lock_order', async (stores) => {
      const streams = Array.from({ length: 12 }, (_, i) => `lock-order-${i}`);
      for (let round = 0; round < 30; round += 1) {
        // Same turn, same streams, opposite orders: batches that locked in call order would deadlock.
        await Promise.all([
          ...streams.map((stream) => stores[0].appendToStream(stream, [newEvent()], { expectedRevision: 'any' })),
          ...[...streams].reverse().map((stream) => stores[1].appendToStream(stream, [newEvent()], { expectedRevision: 'any' })),
        ]);
      }
      for (const stream of streams) expect(await stores[0].readStream(stream)).toHaveLength(60);
    });
  });

  it('never deadlock when their batches expect exact revisions and create streams: one of each pair wins', async () => {
    await withTwoProcesses('event_store_lock_order_exact', async (stores) => {
      const streams = Array.from({ length: 12 }, (_, i) => `exact-order-${i}`);
      for (const stream of streams) await stores[0].appendToStream(stream, [newEvent()], { expectedRevision: 'no_stream' });
      for (let round = 0; round < 30; round += 1) {
        const born = Array.from({ length: 12 }, (_, i) => `exact-order-born-${round}-${i}`);
        const appendsOf = (store: PostgresEventStore, order: (names: string[]) => string[]) => [
          ...order(streams).map((stream) => store.appendToStream(stream, [newEvent()], { expectedRevision: round })),
          ...order(born).map((stream) => store.appendToStream(stream, [newEvent()], { expectedRevision: 'no_stream' })),
        ];
        const results = await Promise.allSettled([
          ...appendsOf(stores[0], (names) => names),
          ...appendsOf(stores[1], (names) => [...names].reverse()),
        ]);
        for (const result of results) if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(WrongExpectedRevisionError);
        expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(24);
      }
      for (const stream of streams) expect(await stores[0].readStream(stream)).toHaveLength(31);
    });
  });
});
