import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { LeaseLostError } from '../../src/core/lease.port.js';
import { PgSqlClient } from '../../src/postgres/pg-sql-client.js';
import { SqlLeases } from '../../src/postgres/sql-leases.js';
import { eventually } from '../support/eventually.js';
import { type AppProcess, spawnFlostra, writeTestTokensFile } from '../support/app-process.js';
import { createTestDatabase } from '../support/postgres-server.js';

/** Leases on a real Postgres: fencing in this process, failover between real processes. */
describe('leases on Postgres', () => {
  let url: string;
  let sql: PgSqlClient;
  let leases: SqlLeases;
  const processes: AppProcess[] = [];

  beforeAll(async () => {
    url = await createTestDatabase('leases');
    sql = new PgSqlClient({ connectionString: url, max: 4 });
    leases = await SqlLeases.open(sql);
  });
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      await p.signal('SIGCONT');
      await p.signal('SIGKILL');
    }
  });
  afterAll(() => sql.close());

  it('grants one of two contenders; after the TTL the other takes it with the next epoch, and the old epoch can neither renew nor write', async () => {
    await sql.query('create table fenced_probe (writer text not null)');
    const first = await leases.tryAcquire('probe', 'default', 'a', 300);
    expect(first).toEqual({ role: 'probe', shard: 'default', holder: 'a', epoch: 1 });
    expect(await leases.tryAcquire('probe', 'default', 'b', 300)).toBeNull();
    expect(await leases.renew(first!, 300)).toBe(true);

    let lost = 0;
    const old = leases.fenced(sql, first!, 300, () => (lost += 1));
    await old.query('insert into fenced_probe values ($1)', ['a']);

    const second = await eventually(
      async () => (await leases.tryAcquire('probe', 'default', 'b', 60_000)) ?? false,
      'the lease to expire and b to take it',
    );
    expect(second).toEqual({ role: 'probe', shard: 'default', holder: 'b', epoch: 2 });
    expect(await leases.renew(first!, 300)).toBe(false);
    await expect(old.query('insert into fenced_probe values ($1)', ['a, after the takeover'])).rejects.toBeInstanceOf(LeaseLostError);
    await expect(old.transaction((tx) => tx.query('insert into fenced_probe values ($1)', ['a, in a transaction']))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    // The fence travels with the writes it guards: queued writes after a takeover commit nothing either.
    await expect(
      old.transaction(async (tx) => tx.queue('insert into fenced_probe values ($1)', ['a, queued in a transaction'])),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(lost).toBe(3);
    await leases.fenced(sql, second, 60_000, () => undefined).query('insert into fenced_probe values ($1)', ['b']);
    const { rows } = await sql.query<{ writer: string }>('select writer from fenced_probe order by writer');
    expect(rows.map((r) => r.writer)).toEqual(['a', 'b']);

    // Released: free at once for the next contender.
    await leases.release(second);
    expect(await leases.tryAcquire('probe', 'default', 'c', 300)).toMatchObject({ holder: 'c', epoch: 3 });
  });

  it('a holder paused with SIGSTOP is taken over after the TTL, and steps down without writing when it resumes', async () => {
    const env = {
      EVENT_STORE_URL: url,
      DATABASE_URL: url,
      FLOSTRA_ROLES: 'dispatcher,watchdog',
      FLOSTRA_TOKENS_FILE: writeTestTokensFile(),
    };
    const a = spawnFlostra(env);
    processes.push(a);
    // Leases taken during the start are logged at debug (quiet until the banner): read the table.
    const holders = async () =>
      Object.fromEntries(
        (await leases.list()).filter((l) => !l.expired).map((l) => [l.role, `${l.holder.split('/')[1]} epoch ${l.epoch}`]),
      );
    await eventually(
      async () =>
        expect(await holders()).toEqual({ admission: `${a.pid} epoch 1`, dispatcher: `${a.pid} epoch 1`, watchdog: `${a.pid} epoch 1` }),
      { what: 'process a to hold the leases', timeoutMs: 60_000 },
    );
    const b = spawnFlostra(env);
    processes.push(b);
    await b.waitFor('Flostra is listening on', 60_000);

    const pausedAt = Date.now();
    await a.signal('SIGSTOP');
    await b.waitFor('lease watchdog acquired epoch 2', 20_000);
    const takeoverMs = Date.now() - pausedAt;
    await b.waitFor('lease dispatcher acquired epoch 2', 20_000);
    process.stdout.write(`lease takeover after SIGSTOP of the holder: ${takeoverMs} ms (TTL 3000 ms, poll 500 ms)\n`);

    await a.signal('SIGCONT');
    await a.waitFor('lease watchdog lost epoch 1; stepped down');
    await a.waitFor('lease dispatcher lost epoch 1; stepped down');
    expect(a.output()).not.toMatch(/LeaseLostError.*failed|subscription failed/);
    expect(await holders()).toEqual({ admission: `${b.pid} epoch 2`, dispatcher: `${b.pid} epoch 2`, watchdog: `${b.pid} epoch 2` });
  }, 120_000);
});
