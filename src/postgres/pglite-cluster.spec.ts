import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PgliteSqlClient } from './pglite-sql-client.js';

/** A pid no process has: above Linux's largest pid_max. */
const GONE_PID = 4_194_305;

describe('a PGlite data directory opened for the first time', () => {
  let scratch: string;

  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'flostra-pglite-cluster-'));
  });

  afterAll(() => {
    rmSync(scratch, { recursive: true, force: true });
  });

  it('gets a cluster made aside and moved into place, removing a creation abandoned before', async () => {
    const dataDir = join(scratch, 'pgdata');
    mkdirSync(dataDir);
    const abandoned = join(scratch, `pgdata.creating-${GONE_PID}-0000`);
    mkdirSync(abandoned);
    writeFileSync(join(abandoned, 'PG_VERSION'), '17\n');

    const client = await PgliteSqlClient.open(dataDir);
    try {
      await client.query('create table kept (n integer primary key)');
      await client.query('insert into kept values (42)');
    } finally {
      await client.close();
    }
    expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
    expect(readdirSync(scratch)).toEqual(['pgdata']);

    const again = await PgliteSqlClient.open(dataDir);
    try {
      expect((await again.query<{ n: number }>('select n from kept')).rows).toEqual([{ n: 42 }]);
    } finally {
      await again.close();
    }
  });

  it('says where it could not make one, and leaves nothing behind', async () => {
    const blocker = join(scratch, 'a-file');
    writeFileSync(blocker, '');
    await expect(PgliteSqlClient.open(join(blocker, 'pgdata'))).rejects.toThrow(/ENOTDIR|not a directory/);
    expect(readdirSync(scratch).filter((name) => name.includes('.creating-'))).toEqual([]);
  });
});
