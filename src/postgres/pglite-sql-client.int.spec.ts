import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sleep } from '../../test/support/eventually.js';
import { PgliteSqlClient } from './pglite-sql-client.js';

describe('PGlite SQL client', () => {
  let client: PgliteSqlClient;

  beforeAll(async () => {
    client = await PgliteSqlClient.open();
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

    it('report a failed write as the cause when a later statement is refused for it', async () => {
      const failing = client.transaction(async (tx) => {
        tx.queue('insert into counter (n) values (310)');
        tx.queue('insert into counter (n) values (310)'); // duplicate key
        return (await tx.query('select count(*) from counter')).rows;
      });
      await expect(failing).rejects.toMatchObject({ code: '23505' });
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
