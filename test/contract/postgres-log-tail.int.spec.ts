import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { Position, RecordedEvent } from '../../src/core/event-store.port.js';
import { READ_PAGE_SQL, READ_TAIL_SQL, PROBE_SQL } from '../../src/event-store/postgres/event-store.queries.js';
import { PostgresEventStore } from '../../src/event-store/postgres/postgres-event-store.js';
import { PgSqlClient } from '../../src/postgres/pg-sql-client.js';
import {
  statementText,
  type SessionLocks,
  type SqlClient,
  type SqlTransaction,
  type Statement,
  type StatementCall,
} from '../../src/postgres/sql-client.port.js';
import { createTestDatabase } from '../support/postgres-server.js';
import { eventually, sleep } from '../support/eventually.js';
import { newEvent, recordSubscription, type SubscriptionRecorder } from './event-store-contract.support.js';

/** The SqlClient port, counting the statements that read the global log. */
class CountingSqlClient implements SqlClient {
  pageReads = 0;
  tailReads = 0;
  probes = 0;
  /** Tail reads sent behind an append batch, in its round trip (`queryThen`). */
  readsBehind = 0;
  readonly queryThen?: SqlClient['queryThen'];

  /** With `readBehind`, passes `queryThen` on, as node-postgres offers it; else the store probes. */
  constructor(
    private readonly inner: SqlClient,
    readBehind = false,
  ) {
    if (readBehind && inner.queryThen !== undefined) {
      this.queryThen = <A, B>(first: StatementCall, then: StatementCall) => {
        if (then.sql === READ_TAIL_SQL) this.readsBehind += 1;
        return inner.queryThen!<A, B>(first, then);
      };
    }
  }

  get logReads(): number {
    return this.pageReads + this.tailReads + this.probes;
  }

  query<T>(sql: Statement, params?: unknown[]): Promise<{ rows: T[] }> {
    if (sql === READ_PAGE_SQL) this.pageReads += 1;
    if (sql === READ_TAIL_SQL) this.tailReads += 1;
    if (sql === PROBE_SQL) this.probes += 1;
    return this.inner.query<T>(sql, params);
  }

  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T> {
    return this.inner.transaction(fn);
  }

  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    return this.inner.listen(channel, onNotify);
  }

  sessionLocks(): SessionLocks {
    return this.inner.sessionLocks();
  }

  notify(channel: string, payload: string): Promise<void> {
    return this.inner.notify(channel, payload);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

// Wake-ups come from appends and NOTIFY only, so counted reads are those of the wake-ups.
const NO_POLLING = { pollIntervalMs: 60_000 };

const ids = (events: RecordedEvent[]) => events.map((event) => event.id);

describe('Postgres event store: the shared tail of the log', () => {
  let url: string;
  let sql: CountingSqlClient;
  /** The same database through a client that sends the tail's reads behind appends. */
  let sqlReadingBehind: CountingSqlClient;
  let raw: pg.Client;

  beforeAll(async () => {
    url = await createTestDatabase('event_store_tail');
    sql = new CountingSqlClient(new PgSqlClient({ connectionString: url }));
    sqlReadingBehind = new CountingSqlClient(new PgSqlClient({ connectionString: url }), true);
    raw = new pg.Client({ connectionString: url });
    await raw.connect();
  });

  afterAll(async () => {
    await raw?.end();
    await sql?.close();
    await sqlReadingBehind?.close();
  });

  async function openStore(tailCapacity: number, client: CountingSqlClient = sql): Promise<PostgresEventStore> {
    return PostgresEventStore.open(client, { ...NO_POLLING, tailCapacity });
  }

  /**
   * Two appends committing in reverse order of their positions: one in a transaction held open
   * (and announcing nothing), one through the store that commits first.
   */
  async function appendOutOfOrder(store: PostgresEventStore, streamId: string, holdMs: number): Promise<void> {
    await raw.query('begin');
    await raw.query('select * from event_store.append($1, $2, $3, $4::jsonb)', [streamId, 'any', null, JSON.stringify([newEvent('Late')])]);
    await store.appendToStream(`${streamId}-early`, [newEvent('Early')], { expectedRevision: 'any' });
    await sleep(holdMs);
    await raw.query('commit');
  }

  async function expectExactly(
    store: PostgresEventStore,
    recorder: SubscriptionRecorder,
    after: Position | null,
    streamPrefixes?: string[],
  ) {
    const expected = await store.readAll({ after, maxCount: 100_000, streamPrefixes });
    await recorder.waitFor(expected.length, 20_000);
    await sleep(100); // room for a duplicate to show up
    await recorder.stop();
    expect(ids(recorder.events)).toEqual(ids(expected));
    expect(recorder.events).toEqual(expected);
  }

  describe.each([
    ['the watcher probes after each append', false],
    ['the tail reads behind each append batch', true],
  ])('when subscriptions behind and at the head run under concurrent appends that commit out of order (%s)', (_, readBehind) => {
    it('gives each of them exactly its events, once and in order', async () => {
      const store = await openStore(64, readBehind ? sqlReadingBehind : sql);
      try {
        for (let n = 0; n < 100; n++) {
          const events = Array.from({ length: 1 + (n % 3) }, () => newEvent('History', { n }));
          await store.appendToStream(`${'abc'[n % 3]}-history`, events, { expectedRevision: 'any' });
        }
        const middle = (await store.readAll({ maxCount: 150 }))[149].position;
        const head = await store.headPosition();
        const subscriptions: Array<[SubscriptionRecorder, Position | null, string[] | undefined]> = [
          [recordSubscription(store, { batchSize: 7 }), null, undefined],
          [recordSubscription(store, { streamPrefixes: ['a-'], batchSize: 3 }), null, ['a-']],
          [recordSubscription(store, { after: middle, streamPrefixes: ['c-'], batchSize: 50 }), middle, ['c-']],
          [recordSubscription(store, { after: head, batchSize: 500 }), head, undefined],
          [recordSubscription(store, { after: head, streamPrefixes: ['b-', 'c-'], batchSize: 2 }), head, ['b-', 'c-']],
          [recordSubscription(store, { after: head, streamPrefixes: ['nobody-'] }), head, ['nobody-']],
        ];

        const writers = [0, 1, 2].map(async (writer) => {
          for (let n = 0; n < 40; n++) {
            const events = Array.from({ length: 1 + ((n + writer) % 3) }, () => newEvent('Live', { writer, n }));
            await store.appendToStream(`${'abc'[(n + writer) % 3]}-live-${writer}`, events, { expectedRevision: 'any' });
          }
        });
        const late = (async () => {
          for (let n = 0; n < 5; n++) await appendOutOfOrder(store, `${'abc'[n % 3]}-late`, 30);
        })();
        // More than one refresh reads at once: the tail must stop at its last event, not at the head.
        const burst = store.appendToStream(
          'b-burst',
          Array.from({ length: 150 }, () => newEvent('Burst')),
          { expectedRevision: 'any' },
        );
        await Promise.all([...writers, late, burst]);

        for (const [recorder, after, prefixes] of subscriptions) await expectExactly(store, recorder, after, prefixes);
      } finally {
        await store.close();
      }
    });
  });

  describe('when a subscription falls further behind than the tail holds', () => {
    it('catches up by reading directly, and still gets every event once, in order', async () => {
      const store = await openStore(20);
      try {
        const head = await store.headPosition();
        const fast = recordSubscription(store, { after: head });
        let release = () => undefined as void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const slow: RecordedEvent[] = [];
        const controller = new AbortController();
        const slowRun = (async () => {
          for await (const batch of store.subscribeToAll({ after: head, batchSize: 5, signal: controller.signal })) {
            slow.push(...batch);
            await gate;
          }
        })();

        for (let n = 0; n < 60; n++) {
          const events = Array.from({ length: 1 + (n % 4) }, () => newEvent('Live', { n }));
          await store.appendToStream(`slow-${n % 5}`, events, { expectedRevision: 'any' });
        }
        await store.appendToStream(
          'slow-burst',
          Array.from({ length: 45 }, () => newEvent('Burst')),
          { expectedRevision: 'any' },
        );
        await appendOutOfOrder(store, 'slow-late', 20);
        const log = await store.readAll({ after: head, maxCount: 1_000 });
        expect(log.length).toBeGreaterThan(100);
        await fast.waitFor(log.length);

        const directReadsBefore = sql.pageReads;
        release();
        await eventually(() => slow.length >= log.length, {
          what: () => `the slow subscription to catch up (${slow.length} of ${log.length})`,
          timeoutMs: 20_000,
          intervalMs: 10,
        });
        await sleep(100);
        controller.abort();
        await slowRun;
        await fast.stop();
        expect(ids(slow)).toEqual(ids(log));
        expect(ids(fast.events)).toEqual(ids(log));
        // It had fallen out of the window: the tail alone could not have served it.
        expect(sql.pageReads).toBeGreaterThan(directReadsBefore);
      } finally {
        await store.close();
      }
    });
  });

  describe('when many subscriptions wait at the head', () => {
    it('reads the log about once per wake-up for all of them, not once per subscription', async () => {
      const store = await openStore(4_096);
      try {
        const head = await store.headPosition();
        const prefixes = [undefined, ['count-'], ['count-', 'other-'], undefined, ['count-'], ['other-']];
        const subscriptions = prefixes.map((streamPrefixes, i) =>
          recordSubscription(store, { after: head, streamPrefixes, batchSize: 1 + i }),
        );
        const receiving = subscriptions.filter((_, i) => prefixes[i]?.[0] !== 'other-');
        await store.appendToStream('count-warmup', [newEvent()], { expectedRevision: 'no_stream' });
        for (const subscription of receiving) await subscription.waitFor(1);
        await sleep(100);

        const before = { logReads: sql.logReads, pageReads: sql.pageReads };
        const appends = 20;
        for (let n = 0; n < appends; n++) {
          await store.appendToStream('count-1', [newEvent('Counted', { n })], { expectedRevision: 'any' });
          for (const subscription of receiving) await subscription.waitFor(2 + n);
        }
        const logReads = sql.logReads - before.logReads;
        const pageReads = sql.pageReads - before.pageReads;
        for (const subscription of subscriptions) await subscription.stop();

        // One wake-up per append; one subscription per wake-up reading would make it 6 × 20.
        expect(pageReads).toBe(0);
        expect(logReads).toBeGreaterThanOrEqual(appends);
        expect(logReads).toBeLessThanOrEqual(appends + 5);
        const log = await store.readAll({ after: head, maxCount: 100 });
        for (const subscription of receiving) expect(subscription.events).toHaveLength(log.length);
      } finally {
        await store.close();
      }
    });
  });

  describe('when the tail reads behind appends', () => {
    it('serves the subscriptions at the head without a read of its own per append', async () => {
      const store = await openStore(4_096, sqlReadingBehind);
      try {
        const head = await store.headPosition();
        const subscriptions = [undefined, ['behind-'], ['other-']].map((streamPrefixes) =>
          recordSubscription(store, { after: head, streamPrefixes }),
        );
        await store.appendToStream('behind-warmup', [newEvent()], { expectedRevision: 'no_stream' });
        for (const subscription of subscriptions.slice(0, 2)) await subscription.waitFor(1);
        await sleep(100);

        const before = { logReads: sqlReadingBehind.logReads, readsBehind: sqlReadingBehind.readsBehind };
        const appends = 20;
        for (let n = 0; n < appends; n++) {
          await store.appendToStream('behind-1', [newEvent('Counted', { n })], { expectedRevision: 'any' });
          for (const subscription of subscriptions.slice(0, 2)) await subscription.waitFor(2 + n);
        }
        const logReads = sqlReadingBehind.logReads - before.logReads;
        const readsBehind = sqlReadingBehind.readsBehind - before.readsBehind;

        expect(readsBehind).toBe(appends);
        // Every append was read behind it: the watcher had nothing left to read.
        expect(logReads).toBeLessThanOrEqual(2);
        const log = await store.readAll({ after: head, maxCount: 100 });
        for (const subscription of subscriptions.slice(0, 2))
          await expectExactly(store, subscription, head, subscription === subscriptions[1] ? ['behind-'] : undefined);
        expect(log).toHaveLength(appends + 1);
        await subscriptions[2].stop();
        expect(subscriptions[2].events).toEqual([]);
      } finally {
        await store.close();
      }
    });
  });

  describe('when the log is long', () => {
    /** Shared buffers one statement touched: what it costs Postgres, independent of the clock. */
    /**
     * Pages one run of the statement touches, planned the way the store runs it: prepared once
     * per connection, so after a few runs Postgres may use a generic plan that knows no
     * parameter values. The worse of the custom and the generic plan counts.
     */
    async function buffersTouched(statement: Statement, literals: string[]): Promise<number> {
      const text = statementText(statement);
      const touched = async (explain: string) => {
        const { rows } = await raw.query(`explain (analyze, buffers, format json) ${explain}`);
        const plan = (rows[0] as { 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] })[
          'QUERY PLAN'
        ][0].Plan;
        return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
      };
      const args = literals.length === 0 ? '' : `(${literals.join(', ')})`;
      await raw.query(`prepare touched as ${text}`);
      try {
        await raw.query('set plan_cache_mode = force_custom_plan');
        const custom = await touched(`execute touched${args}`);
        await raw.query('set plan_cache_mode = force_generic_plan');
        const generic = await touched(`execute touched${args}`);
        return Math.max(custom, generic);
      } finally {
        await raw.query('deallocate touched');
        await raw.query('reset plan_cache_mode');
      }
    }

    it('reads its end (tail refresh, probe) through a few index pages, never the whole log', async () => {
      const store = await openStore(64);
      try {
        // 40,000 events, and statistics from when the log was short, as between two autovacuum runs.
        await raw.query('analyze event_store.events');
        for (let k = 0; k < 400; k++) {
          await store.appendToStream(
            `bulk-${k}`,
            Array.from({ length: 100 }, (_, n) => newEvent('Bulk', { n })),
            { expectedRevision: 'any' },
          );
        }
        const { rows } = await raw.query(
          'select transaction_id::text as xid, seq from event_store.events order by transaction_id desc, seq desc limit 1',
        );
        const { xid, seq } = rows[0] as { xid: string; seq: string };

        // A full scan of the log would touch well over a thousand pages.
        expect(await buffersTouched(READ_TAIL_SQL, [`'${xid}'`, seq, '500'])).toBeLessThan(60);
        expect(await buffersTouched(READ_PAGE_SQL, [`'${xid}'`, seq, `'{execution-}'`, '500'])).toBeLessThan(60);
        expect(await buffersTouched(PROBE_SQL, [])).toBeLessThan(30);
      } finally {
        await store.close();
      }
    });
  });
});
