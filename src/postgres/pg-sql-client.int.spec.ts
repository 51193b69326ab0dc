import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { eventually, sleep } from '../../test/support/eventually.js';
import { createTestDatabase } from '../../test/support/postgres-server.js';
import { PgSqlClient } from './pg-sql-client.js';
import { reusable } from './sql-client.port.js';

describe('node-postgres SQL client', () => {
  let url: string;
  let client: PgSqlClient;
  const errors: unknown[] = [];

  beforeAll(async () => {
    url = await createTestDatabase('pg_sql_client');
    client = new PgSqlClient({ connectionString: url, application_name: 'flostra-sql-client-spec' }, { onError: (e) => errors.push(e) });
    await client.query('create table counter (n integer primary key)');
  });

  afterAll(async () => {
    await client.close();
  });

  describe('a reusable statement', () => {
    it('is prepared once on a connection and run again from there, in and outside transactions', async () => {
      const single = new PgSqlClient({ connectionString: url, max: 1 });
      try {
        const doubled = reusable('select $1::int * 2 as n');
        expect((await single.query(doubled, [2])).rows).toEqual([{ n: 4 }]);
        expect(await single.transaction(async (tx) => (await tx.query(doubled, [3])).rows)).toEqual([{ n: 6 }]);
        expect((await single.query(doubled, [4])).rows).toEqual([{ n: 8 }]);
        const { rows } = await single.query<{ statement: string }>('select statement from pg_prepared_statements where name = $1', [
          doubled.name,
        ]);
        expect(rows).toEqual([{ statement: doubled.text }]);
      } finally {
        await single.close();
      }
    });

    it('has a name of its own for each text', () => {
      expect(reusable('select 1').name).toBe(reusable('select 1').name);
      expect(reusable('select 1').name).not.toBe(reusable('select 2').name);
    });
  });

  describe('NOTIFY', () => {
    it('is sent only when another process listens on the database', async () => {
      const alone = await createTestDatabase('pg_sql_client_alone');
      // Whatever the connection string calls the application, the signal connections are known.
      const named = `${alone}?application_name=someone-else`;
      const sender = new PgSqlClient({ connectionString: named });
      const observer = new pg.Client({ connectionString: alone });
      await observer.connect();
      const heard: string[] = [];
      observer.on('notification', (message) => heard.push(message.payload ?? ''));
      try {
        // A plain connection listening is not a Flostra process: nobody to wake.
        await observer.query('listen spec_audience');
        await sender.notify('spec_audience', 'unheard');
        await sleep(1_100); // withheld, and still nobody to send it to when asked again: dropped
        expect(heard).toEqual([]);

        const listener = new PgSqlClient({ connectionString: named });
        try {
          const got: string[] = [];
          await listener.listen('spec_audience', (payload) => got.push(payload));
          await sleep(1_100); // what the sender learnt of its audience expires after a second
          await sender.notify('spec_audience', 'heard');
          // Each connection gets the notification in its own time: wait for both.
          await eventually(() => got.includes('heard') && heard.includes('heard'), { timeoutMs: 5_000 });
          expect(heard).toEqual(['heard']);
        } finally {
          await listener.close();
        }
      } finally {
        await observer.end();
        await sender.close();
      }
    });
  });

  describe('a NOTIFY withheld while nobody else listened', () => {
    it('reaches a process that starts listening before the audience is asked again', async () => {
      const alone = await createTestDatabase('pg_sql_client_owed');
      const sender = new PgSqlClient({ connectionString: alone });
      const listener = new PgSqlClient({ connectionString: alone });
      try {
        await sender.notify('spec_owed', 'owed'); // nobody else listens: withheld
        const got: string[] = [];
        await listener.listen('spec_owed', (payload) => got.push(payload));
        // No further NOTIFY: the withheld one comes once the sender asks about its audience again.
        await eventually(() => got.includes('owed'), { timeoutMs: 5_000 });
        expect(got).toEqual(['owed']);
      } finally {
        await listener.close();
        await sender.close();
      }
    });
  });

  describe('onWriteEnded', () => {
    it('tells each transaction (committed or rolled back) and each NOTIFY, not single statements', async () => {
      let ended = 0;
      const stop = client.onWriteEnded(() => (ended += 1));
      await client.transaction(async (tx) => tx.query('select 1'));
      await client.transaction(async () => Promise.reject(new Error('no'))).catch(() => undefined);
      await client.notify('pg_spec_writes', 'x');
      await client.query('select 1');
      stop();
      await client.transaction(async (tx) => tx.query('select 1'));
      expect(ended).toBe(3);
    });
  });

  describe('when a transaction function throws', () => {
    it('rolls back everything it wrote', async () => {
      const failing = client.transaction(async (tx) => {
        await tx.query('insert into counter (n) values (1)');
        throw new Error('decided against it');
      });
      await expect(failing).rejects.toThrow('decided against it');
      expect((await client.query('select n from counter')).rows).toEqual([]);
      expect(await client.transaction(async (tx) => (await tx.query('insert into counter (n) values (2) returning n')).rows)).toEqual([
        { n: 2 },
      ]);
    });
  });

  describe('statements of a transaction', () => {
    it('run in the order sent: a read sees the writes queued before it, and the commit keeps them', async () => {
      const seen = await client.transaction(async (tx) => {
        tx.queue('insert into counter (n) values (20)');
        tx.queue('insert into counter (n) values (21)');
        const [both, last] = await Promise.all([
          tx.query<{ n: number }>('select n from counter where n in (20, 21) order by n'),
          tx.query<{ n: number }>('select max(n) as n from counter where n in (20, 21)'),
        ]);
        tx.queue('insert into counter (n) values (22)');
        return { both: both.rows, last: last.rows };
      });
      expect(seen).toEqual({ both: [{ n: 20 }, { n: 21 }], last: [{ n: 21 }] });
      expect((await client.query('select n from counter where n between 20 and 22 order by n')).rows).toEqual([
        { n: 20 },
        { n: 21 },
        { n: 22 },
      ]);
    });

    it("roll back when a queued write fails, and the transaction rejects with that write's own error", async () => {
      const failing = client.transaction(async (tx) => {
        tx.queue('insert into counter (n) values (30)');
        tx.queue('insert into counter (n) values (30)'); // duplicate key
        tx.queue('insert into counter (n) values (31)'); // refused: the transaction is aborted
        return 'done';
      });
      await expect(failing).rejects.toMatchObject({ code: '23505' });
      expect((await client.query('select n from counter where n in (30, 31)')).rows).toEqual([]);
      // The connection went back to the pool in a usable state.
      expect(await client.transaction(async (tx) => (await tx.query('insert into counter (n) values (32) returning n')).rows)).toEqual([
        { n: 32 },
      ]);
    });

    it('report a failed write as the cause when a later statement is refused for it', async () => {
      const failing = client.transaction(async (tx) => {
        tx.queue('insert into counter (n) values (40)');
        tx.queue('insert into counter (n) values (40)');
        return (await tx.query('select count(*) from counter')).rows;
      });
      await expect(failing).rejects.toMatchObject({ code: '23505' });
    });

    it('are not committed when the function swallowed one that failed', async () => {
      const swallowing = client.transaction(async (tx) => {
        tx.queue('insert into counter (n) values (50)');
        await tx.query('select 1 / 0').catch(() => undefined);
        tx.queue('insert into counter (n) values (51)');
      });
      await expect(swallowing).rejects.toMatchObject({ code: '22012' });
      expect((await client.query('select n from counter where n in (50, 51)')).rows).toEqual([]);
    });
  });

  describe('two statements sent together (queryThen)', () => {
    it('commit the first before the second runs, which sees its write, on one connection', async () => {
      const single = new PgSqlClient({ connectionString: url, max: 1 });
      try {
        await single.query('create table pair (n integer primary key, xid xid8 not null)');
        const sent = single.queryThen<{ n: number }, { n: number; status: string }>(
          { sql: 'insert into pair values ($1, pg_current_xact_id()) returning n', params: [1] },
          // Run in the insert's own transaction, the second would see it 'in progress'.
          { sql: 'select n, pg_xact_status(xid) as status from pair' },
        );
        expect(await sent.first).toEqual({ rows: [{ n: 1 }] });
        expect(await sent.then).toEqual({ rows: [{ n: 1, status: 'committed' }] });
        // Both went through the pool's one connection, which is free again.
        expect((await single.query<{ n: number }>('select count(*)::int as n from pair')).rows).toEqual([{ n: 1 }]);
      } finally {
        await single.close();
      }
    });

    it('answer each on its own: a failing first leaves the second to run, and the pool recovers', async () => {
      const single = new PgSqlClient({ connectionString: url, max: 1 });
      try {
        await single.query('create table pair_fail (n integer primary key)');
        await single.query('insert into pair_fail values (1)');
        const sent = single.queryThen<unknown, { n: number }>(
          { sql: 'insert into pair_fail values ($1)', params: [1] },
          { sql: 'select count(*)::int as n from pair_fail' },
        );
        await expect(sent.first).rejects.toMatchObject({ code: '23505' });
        expect(await sent.then).toEqual({ rows: [{ n: 1 }] });
        expect((await single.query<{ n: number }>('select 2 as n')).rows).toEqual([{ n: 2 }]);
      } finally {
        await single.close();
      }
    });
  });

  describe('when Postgres ends a connection that is checked out', () => {
    // The pool listens for errors only on idle connections; a checked-out one that dies must not
    // take the process down with an unhandled 'error' event (jest fails the suite if it does).
    it.each([
      ['a transaction', (doomed: PgSqlClient) => doomed.transaction((tx) => tx.query('select pg_sleep(30)'))],
      [
        'two statements sent together',
        (doomed: PgSqlClient) => {
          const sent = doomed.queryThen({ sql: 'select pg_sleep(30)' }, { sql: 'select 1' });
          return Promise.all([sent.first, sent.then]);
        },
      ],
    ])('rejects %s as unavailable, and the pool serves the next caller', async (_what, run) => {
      const name = `flostra-spec-doomed-${Math.random().toString(36).slice(2, 8)}`;
      const doomed = new PgSqlClient({ connectionString: url, max: 1, application_name: name });
      const killer = new pg.Client({ connectionString: url });
      await killer.connect();
      try {
        const outcome = run(doomed).then(
          () => 'resolved',
          (error: unknown) => error,
        );
        const terminate = async () =>
          (
            await killer.query<{ killed: boolean }>(
              `select pg_terminate_backend(pid) as killed from pg_stat_activity where application_name = $1 and query like '%pg_sleep%'`,
              [name],
            )
          ).rows.length > 0;
        await eventually(terminate, { what: 'the sleeping backend to be terminated', timeoutMs: 10_000 });
        expect(await outcome).toMatchObject({ code: 'unavailable' });
        expect((await doomed.query<{ n: number }>('select 1 as n')).rows).toEqual([{ n: 1 }]);
      } finally {
        await killer.end();
        await doomed.close();
      }
    });
  });

  describe('when a transaction asks for an asynchronous commit', () => {
    it('runs with synchronous_commit off, commits its writes, and leaves the connection as it was', async () => {
      const setting = (tx: { query: PgSqlClient['query'] }) => tx.query<{ synchronous_commit: string }>('show synchronous_commit');
      const inside = await client.transaction(
        async (tx) => {
          await tx.query('insert into counter (n) values (3)');
          return (await setting(tx)).rows[0].synchronous_commit;
        },
        { asynchronousCommit: true },
      );
      expect(inside).toBe('off');
      expect((await client.query('select n from counter where n = 3')).rows).toEqual([{ n: 3 }]);
      // Pooled connections are reused: the setting must not outlive the transaction.
      const afterwards = await Promise.all(
        Array.from({ length: 5 }, () => client.transaction(async (tx) => (await setting(tx)).rows[0].synchronous_commit)),
      );
      expect(afterwards).toEqual(Array(5).fill('on'));
    });
  });

  describe('when the listening connection is killed', () => {
    it('reconnects, signals the possible gap with an empty payload, and delivers later notifications', async () => {
      const payloads: string[] = [];
      const unlisten = await client.listen('pg_spec', (payload) => payloads.push(payload));
      const sender = new pg.Client({ connectionString: url });
      await sender.connect();
      try {
        await sender.query(`select pg_notify('pg_spec', 'before')`);
        await eventually(() => payloads.includes('before'), { timeoutMs: 5_000 });
        const { rows } = await sender.query(
          `select pg_terminate_backend(pid) as killed from pg_stat_activity
           where application_name = 'flostra-signals' and datname = current_database() and query ilike 'listen%'`,
        );
        expect(rows).toEqual([{ killed: true }]);
        await eventually(() => payloads.includes(''), { timeoutMs: 5_000 });
        await sender.query(`select pg_notify('pg_spec', 'after')`);
        await eventually(() => payloads.includes('after'), { timeoutMs: 5_000 });
        expect(errors.length).toBeGreaterThan(0);
      } finally {
        await sender.end();
        await unlisten();
      }
    });
  });
});
