import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { PostgresEventStore } from '../../src/event-store/postgres/postgres-event-store.js';
import { comparePositions, encodePosition } from '../../src/event-store/postgres/position.codec.js';
import { PgSqlClient } from '../../src/postgres/pg-sql-client.js';
import { PgliteSqlClient } from '../../src/postgres/pglite-sql-client.js';
import { createTestDatabase } from '../support/postgres-server.js';
import { newEvent, recordSubscription, sleep, uniquePrefix } from './event-store-contract.support.js';
import { eventStoreContract } from './event-store.contract.js';

// A poll interval longer than any test: wake-ups must come from appends and NOTIFY, not polling.
const NO_POLLING = { pollIntervalMs: 60_000 };

eventStoreContract('Postgres on PGlite (in memory)', async () => {
  const client = await PgliteSqlClient.open();
  return { open: () => PostgresEventStore.open(client, NO_POLLING), dispose: () => client.close() };
});

eventStoreContract('Postgres on a real server', async () => {
  const url = await createTestDatabase('event_store_contract');
  return { open: () => PostgresEventStore.open(new PgSqlClient({ connectionString: url }), { ...NO_POLLING, closeClient: true }) };
});

/** Calls the append function on a raw connection, as an append inside a held-open transaction. */
async function rawAppend(raw: pg.Client, streamId: string, event: ReturnType<typeof newEvent>): Promise<string> {
  const { rows } = await raw.query('select * from event_store.append($1, $2, $3, $4::jsonb)', [streamId, 'no_stream', null, JSON.stringify([event])]);
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
        expect(delivered!.id).toBe(event.id);
      } finally {
        await polling.close();
      }
    });
  });

  describe('when the store fails under a subscription', () => {
    it('ends the subscription with the error instead of waiting forever', async () => {
      const brokenUrl = await createTestDatabase('event_store_broken');
      const broken = await PostgresEventStore.open(new PgSqlClient({ connectionString: brokenUrl }), { pollIntervalMs: 50, closeClient: true });
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
