import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../../test/support/eventually.js';
import { PgliteSqlClient } from './pglite-sql-client.js';
import { PgliteThreadSqlClient } from './pglite-thread-sql-client.js';
import type { SqlClient } from './sql-client.port.js';

const CLIENTS: Array<[string, () => Promise<SqlClient>]> = [
  ['on this thread', () => PgliteSqlClient.open()],
  ['on a thread of its own', () => PgliteThreadSqlClient.open()],
];

describe.each(CLIENTS)('PGlite SQL client %s', (_name, open) => {
  let client: SqlClient;

  beforeAll(async () => {
    client = await open();
    await client.query('create table counter (n integer primary key)');
  });

  afterAll(async () => {
    await client.close();
  });

  describe('when transactions are requested concurrently', () => {
    it('runs them one after the other on its single connection, never interleaved', async () => {
      // Each transaction reads, yields to the event loop, then writes what it read plus one:
      // any interleaving would make two of them write the same number.
      const written = await Promise.all(
        Array.from({ length: 8 }, () =>
          client.transaction(async (tx) => {
            const { rows } = await tx.query<{ n: number | null }>('select max(n) as n from counter');
            await sleep(2);
            const next = (rows[0]?.n ?? 0) + 1;
            await tx.query('insert into counter (n) values ($1)', [next]);
            return next;
          }),
        ),
      );
      expect([...written].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    });

    it('rolls back a transaction whose function throws, and keeps serving', async () => {
      const failing = client.transaction(async (tx) => {
        await tx.query('insert into counter (n) values (100)');
        throw new Error('decided against it');
      });
      await expect(failing).rejects.toThrow('decided against it');
      expect((await client.query('select n from counter where n = 100')).rows).toEqual([]);
    });
  });

  describe('statements of a transaction', () => {
    it('run in the order sent: a read sees the writes queued before it, and the commit keeps them', async () => {
      const seen = await client.transaction(async (tx) => {
        tx.queue('insert into counter (n) values (200)');
        const { rows } = await tx.query<{ n: number }>('select n from counter where n = 200');
        tx.queue('insert into counter (n) values (201)');
        return rows;
      });
      expect(seen).toEqual([{ n: 200 }]);
      expect((await client.query('select n from counter where n in (200, 201) order by n')).rows).toEqual([{ n: 200 }, { n: 201 }]);
    });

    it("roll back when a queued write fails, and the transaction rejects with that write's own error", async () => {
      const failing = client.transaction(async (tx) => {
        tx.queue('insert into counter (n) values (300)');
        tx.queue('insert into counter (n) values (300)'); // duplicate key
        tx.queue('insert into counter (n) values (301)');
        return 'done';
      });
      await expect(failing).rejects.toMatchObject({ code: '23505' });
      expect((await client.query('select n from counter where n in (300, 301)')).rows).toEqual([]);
    });

    it("reject with the COMMIT's own error when the commit fails, and keep nothing", async () => {
      await client.query('create table deferred (k int constraint deferred_k unique deferrable initially deferred)');
      const failing = client.transaction(async (tx) => {
        tx.queue('insert into deferred values (1)');
        tx.queue('insert into deferred values (1)'); // checked at COMMIT only
      });
      await expect(failing).rejects.toMatchObject({ code: '23505', constraint: 'deferred_k' });
      expect((await client.query('select k from deferred')).rows).toEqual([]);
    });

    it('report a failed write as the cause when a later statement is refused for it', async () => {
      const failing = client.transaction(async (tx) => {
        tx.queue('insert into counter (n) values (310)');
        tx.queue('insert into counter (n) values (310)'); // duplicate key
        return (await tx.query('select count(*) from counter')).rows;
      });
      await expect(failing).rejects.toMatchObject({ code: '23505' });
    });
  });

  describe('values and errors', () => {
    it('come back as PGlite gives them: numbers, dates, JSON, bytes and nulls', async () => {
      const { rows } = await client.query<Record<string, unknown>>(
        `select 42::int as n, '2026-12-02T10:00:00Z'::timestamptz as at, $1::jsonb as doc, $2::bytea as bytes, null::text as nothing`,
        [JSON.stringify({ a: [1, 'two'] }), new Uint8Array([1, 2, 255])],
      );
      expect(rows).toEqual([
        { n: 42, at: new Date('2026-12-02T10:00:00Z'), doc: { a: [1, 'two'] }, bytes: new Uint8Array([1, 2, 255]), nothing: null },
      ]);
    });

    it("keep a failed statement's SQLSTATE and constraint, and the client goes on serving", async () => {
      await client.query('create table keyed (k text constraint keyed_pk primary key)');
      await client.query(`insert into keyed values ('a')`);
      await expect(client.query(`insert into keyed values ('a')`)).rejects.toMatchObject({ code: '23505', constraint: 'keyed_pk' });
      await expect(client.query('select * from no_such_table')).rejects.toThrow(/no_such_table/);
      expect((await client.query('select k from keyed')).rows).toEqual([{ k: 'a' }]);
    });

    it('make a query outside a transaction wait for the open one, as one connection does', async () => {
      let inside!: () => void;
      const entered = new Promise<void>((resolve) => (inside = resolve));
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const tx = client.transaction(async (t) => {
        await t.query('insert into counter (n) values (400)');
        inside();
        await held;
      });
      await entered;
      const outside = client.query<{ n: number }>('select n from counter where n = 400');
      let answered = false;
      void outside.then(() => (answered = true));
      await sleep(50);
      expect(answered).toBe(false);
      release();
      await tx;
      expect((await outside).rows).toEqual([{ n: 400 }]);
    });
  });

  describe('a background transaction', () => {
    it('commits as any other does', async () => {
      await client.transaction(async (tx) => tx.queue('insert into counter (n) values (500)'), { background: true });
      expect((await client.query('select n from counter where n = 500')).rows).toEqual([{ n: 500 }]);
    });
  });

  describe('when listening on a channel', () => {
    it('delivers notifications until unlistened', async () => {
      const payloads: string[] = [];
      const unlisten = await client.listen('pglite_spec', (payload) => payloads.push(payload));
      await client.notify('pglite_spec', 'one');
      await sleep(10);
      await unlisten();
      await client.notify('pglite_spec', 'two');
      await sleep(10);
      expect(payloads).toEqual(['one']);
    });
  });
});

describe('background transactions of the PGlite thread client', () => {
  let client: PgliteThreadSqlClient | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  /**
   * Holds a transaction open (the database is busy with it), then asks for a background
   * transaction and, once `between` has run, for a plain insert; releases the held one and
   * returns the order in which the three landed.
   */
  async function arrivalOrder(open: PgliteThreadSqlClient, between: () => Promise<void> | void): Promise<string[]> {
    await open.query('create table if not exists arrivals (id serial primary key, what text not null)');
    await open.query('truncate arrivals');
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = open.transaction(async (tx) => {
      await tx.query(`insert into arrivals (what) values ('held')`);
      entered();
      await held;
    });
    await inside;
    const background = open.transaction(async (tx) => tx.queue(`insert into arrivals (what) values ('background')`), { background: true });
    await between();
    const later = open.query(`insert into arrivals (what) values ('later')`);
    release();
    await Promise.all([first, background, later]);
    return (await open.query<{ what: string }>('select what from arrivals order by id')).rows.map((row) => row.what);
  }

  it('lets work asked for later go first while the database is busy', async () => {
    client = await PgliteThreadSqlClient.open(undefined, { backgroundMaxWaitMs: 60_000 });
    expect(await arrivalOrder(client, () => undefined)).toEqual(['held', 'later', 'background']);
  });

  it('begins a background transaction anyway once it has waited its longest', async () => {
    client = await PgliteThreadSqlClient.open(undefined, { backgroundMaxWaitMs: 10 });
    // Far longer than the 10 ms it may wait: it has begun (queued behind the held one) by then.
    expect(await arrivalOrder(client, () => sleep(500))).toEqual(['held', 'background', 'later']);
  });

  it('begins the held background transactions at once when a reader asks', async () => {
    client = await PgliteThreadSqlClient.open(undefined, { backgroundMaxWaitMs: 60_000 });
    const open = client;
    expect(await arrivalOrder(open, () => open.startBackgroundNow())).toEqual(['held', 'background', 'later']);
  });

  it('rolls a held background transaction back like any other when its function throws', async () => {
    client = await PgliteThreadSqlClient.open(undefined, { backgroundMaxWaitMs: 60_000 });
    await client.query('create table kept (v text)');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // A read makes the transaction begin, so the database is busy with it until it is released.
    const first = client.transaction(async (tx) => {
      await tx.query('select 1');
      await held;
    });
    const refused = client.transaction(
      async (tx) => {
        tx.queue(`insert into kept values ('never')`);
        throw new Error('refused');
      },
      { background: true },
    );
    release();
    await first;
    await expect(refused).rejects.toThrow('refused');
    expect((await client.query('select v from kept')).rows).toEqual([]);
  });
});

describe('transactions of the PGlite thread client', () => {
  let client: PgliteThreadSqlClient | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  it('hold the database only from the first read their function awaits: queued writes wait for its end', async () => {
    client = await PgliteThreadSqlClient.open();
    await client.query('create table queued (v text)');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const writing = client.transaction(async (tx) => {
      tx.queue(`insert into queued values ('one')`);
      await held;
      tx.queue(`insert into queued values ('two')`);
    });
    // The transaction has not begun while its function waits: a query outside it is answered,
    // and does not see its writes.
    expect((await client.query('select v from queued')).rows).toEqual([]);
    release();
    await writing;
    expect((await client.query('select v from queued order by v')).rows).toEqual([{ v: 'one' }, { v: 'two' }]);
  });

  it('fail with the reason once the thread is gone, and hurrying background work then is harmless', async () => {
    const closed = await PgliteThreadSqlClient.open();
    await closed.close();
    await expect(closed.transaction(async (tx) => tx.queue('select 1'), { background: true })).rejects.toThrow(
      'the PGlite client is closed',
    );
    expect(() => closed.startBackgroundNow()).not.toThrow();
  });

  it('roll back every queued write when one of them fails at the end', async () => {
    client = await PgliteThreadSqlClient.open();
    await client.query('create table unique_values (v text primary key)');
    const failing = client.transaction(async (tx) => {
      tx.queue(`insert into unique_values values ('a')`);
      tx.queue(`insert into unique_values values ('a')`);
      tx.queue(`insert into unique_values values ('b')`);
    });
    await expect(failing).rejects.toMatchObject({ code: '23505' });
    expect((await client.query('select v from unique_values')).rows).toEqual([]);
  });
});

describe('PGlite SQL client on a thread of its own, persisted', () => {
  it('keeps what it committed in its data directory for the next open', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flostra-pglite-thread-'));
    try {
      const first = await PgliteThreadSqlClient.open(join(dir, 'pgdata'));
      await first.transaction(async (tx) => {
        await tx.query('create table kept (v text)');
        tx.queue(`insert into kept values ('across opens')`);
      });
      await first.close();
      await expect(first.query('select 1')).rejects.toThrow(/closed/);

      const again = await PgliteThreadSqlClient.open(join(dir, 'pgdata'));
      expect((await again.query('select v from kept')).rows).toEqual([{ v: 'across opens' }]);
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
