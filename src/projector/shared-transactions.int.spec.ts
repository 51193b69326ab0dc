import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PgliteSqlClient } from '../postgres/pglite-sql-client.js';
import type { SqlTransaction } from '../postgres/sql-client.port.js';
import { SharedTransactions } from './shared-transactions.js';

describe('shared transactions of read-model batches', () => {
  let sql: PgliteSqlClient;

  beforeAll(async () => {
    sql = await PgliteSqlClient.open();
    await sql.query('create table written (batch text primary key, txid bigint not null)');
  });

  afterAll(async () => {
    await sql.close();
  });

  /** A batch that records its name and the transaction it ran in, then fails if told to. */
  const batch =
    (name: string, fail = false) =>
    async (tx: SqlTransaction) => {
      await tx.query('insert into written (batch, txid) values ($1, txid_current())', [name]);
      if (fail) throw new Error(`${name} refused`);
    };
  const txidOf = async (name: string) =>
    (await sql.query<{ txid: string | number }>('select txid from written where batch = $1', [name])).rows[0]?.txid;

  it('commits batches started in one turn in one transaction', async () => {
    const shared = new SharedTransactions(sql);
    await Promise.all(['a1', 'a2', 'a3'].map((name) => shared.run(batch(name), () => undefined)));
    const ids = await Promise.all(['a1', 'a2', 'a3'].map(txidOf));
    expect(ids[0]).toBeDefined();
    expect(new Set(ids.map(String)).size).toBe(1);
  });

  it('runs the others again alone when one fails, and fails only that one', async () => {
    const shared = new SharedTransactions(sql);
    const rolledBack: string[] = [];
    const outcomes = await Promise.allSettled(
      ['b1', 'b2', 'b3'].map((name) => shared.run(batch(name, name === 'b2'), () => rolledBack.push(name))),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(rolledBack.sort()).toEqual(['b1', 'b2', 'b3']);
    expect(await txidOf('b2')).toBeUndefined();
    const [first, third] = [await txidOf('b1'), await txidOf('b3')];
    expect(first).toBeDefined();
    expect(third).toBeDefined();
    // Alone: each in a transaction of its own.
    expect(String(first)).not.toBe(String(third));
  });

  it('asks for a background transaction only when no batch in it has a reader waiting', async () => {
    const asked: (boolean | undefined)[] = [];
    const recording = Object.create(sql) as PgliteSqlClient;
    recording.transaction = (work, options) => {
      asked.push(options?.background);
      return sql.transaction(work, options);
    };
    const shared = new SharedTransactions(recording);
    await Promise.all([shared.run(batch('d1'), () => undefined, true), shared.run(batch('d2'), () => undefined, true)]);
    await Promise.all([shared.run(batch('d3'), () => undefined, true), shared.run(batch('d4'), () => undefined, false)]);
    await shared.run(batch('d5'), () => undefined, true);
    expect(asked).toEqual([true, false, true]);
  });

  it('lets a batch of a later turn go in its own transaction', async () => {
    const shared = new SharedTransactions(sql);
    await shared.run(batch('c1'), () => undefined);
    await shared.run(batch('c2'), () => undefined);
    expect(String(await txidOf('c1'))).not.toBe(String(await txidOf('c2')));
  });
});
