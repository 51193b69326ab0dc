import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { Principal } from '../../src/auth/principal.js';
import { ConfigError, SecretKeyBytes } from '../../src/config/config.js';
import { systemClock } from '../../src/core/clock.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { randomIds } from '../../src/core/ids.js';
import { createLogger } from '../../src/core/logger.js';
import { PostgresEventStore } from '../../src/event-store/postgres/postgres-event-store.js';
import { PgliteSqlClient } from '../../src/postgres/pglite-sql-client.js';
import { PutSecretCommand, PutSecretHandler } from '../../src/secrets/application/put-secret.handler.js';
import { SecretStreams } from '../../src/secrets/application/secret-streams.js';
import { SecretValues } from '../../src/secrets/infrastructure/secret-values.table.js';
import { SecretValueUnreadableError, SecretVault } from '../../src/secrets/infrastructure/secret-vault.js';
import { secretKeyOf, SecretsKeyring, type SecretKey } from '../../src/secrets/infrastructure/secrets-keyring.js';
import { SecretsMaintenance } from '../../src/secrets/infrastructure/secrets-maintenance.js';

/**
 * Storage of secret values (docs/architecture.md, "Secrets"; docs/operations.md, "Secrets key
 * and rotation") on PGlite: key rotation re-encrypts rows and never events; a key this process
 * lacks stops it clearly; a row copied to another secret does not decrypt; a row whose append
 * failed is inert, and removed.
 */

const logger = createLogger({ level: 'silent' });
const admin: Principal = { subject: 'alice', workspaces: new Map([['ws', 'admin']]), global: new Set(), tokenId: 'test' };
const newKey = (): SecretKey => secretKeyOf(new SecretKeyBytes(randomBytes(32)));

describe('secret values at rest', () => {
  let sql: PgliteSqlClient;
  let store: EventStore;
  let values: SecretValues;
  let streams: SecretStreams;

  beforeAll(async () => {
    sql = await PgliteSqlClient.open();
    store = await PostgresEventStore.open(sql);
    values = await SecretValues.open(sql);
    streams = new SecretStreams(store, systemClock, randomIds);
  });
  afterAll(async () => {
    await store.close();
    await sql.close();
  });

  const vault = (keyring: SecretsKeyring) => new SecretVault(keyring, values, randomIds);
  const put = (keyring: SecretsKeyring, name: string, value: string, workspace = 'ws', secrets = streams) =>
    new PutSecretHandler(secrets, vault(keyring), logger).execute(
      new PutSecretCommand({ ...admin, workspaces: new Map([[workspace, 'admin']]) }, workspace, name, value),
    );
  const read = async (keyring: SecretsKeyring, name: string, workspace = 'ws') => {
    const secret = (await streams.load(workspace)).current.get(name)!;
    return vault(keyring).read(secret.valueId, { workspaceId: workspace, name, version: secret.version });
  };
  const maintenance = (keyring: SecretsKeyring) => new SecretsMaintenance(keyring, values, streams, logger);
  const keysOfRows = async () =>
    (await sql.query<{ key_id: string }>('select distinct key_id from secret_values')).rows.map((r) => r.key_id);
  const rowCount = async () => Number((await sql.query<{ n: number }>('select count(*)::int as n from secret_values')).rows[0].n);

  it('rotates: written under A, read under B with A previous, re-encrypted, read with B alone; another key fails clearly', async () => {
    const [a, b, c] = [newKey(), newKey(), newKey()];
    await put(new SecretsKeyring(a), 'rotated', 'the value');
    const events = await store.readStream('secrets-ws');
    expect(await keysOfRows()).toEqual([a.id]);

    const rotating = new SecretsKeyring(b, [a]);
    await maintenance(rotating).checkKeys();
    expect(await read(rotating, 'rotated')).toBe('the value');
    expect(await maintenance(rotating).runOnce()).toEqual({ resealed: 1, remainingUnderOtherKeys: 0, removed: 0 });
    expect(await keysOfRows()).toEqual([b.id]);
    // Rotation changes rows, never events.
    expect(await store.readStream('secrets-ws')).toEqual(events);

    const rotated = new SecretsKeyring(b);
    await maintenance(rotated).checkKeys();
    expect(await read(rotated, 'rotated')).toBe('the value');

    const wrong = new SecretsKeyring(c);
    const refused = await maintenance(wrong)
      .checkKeys()
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as Error).message).toBe(
      `FLOSTRA_SECRETS_KEY: 1 stored secret values are encrypted under key ${b.id}, which neither FLOSTRA_SECRETS_KEY (key ${c.id}) nor FLOSTRA_SECRETS_PREVIOUS_KEYS holds; add the key they were written with to FLOSTRA_SECRETS_PREVIOUS_KEYS`,
    );
    await expect(read(wrong, 'rotated')).rejects.toThrow(SecretValueUnreadableError);
    await expect(maintenance(new SecretsKeyring(null)).checkKeys()).rejects.toThrow(
      `FLOSTRA_SECRETS_KEY: required: 1 stored secret values are encrypted under key ${b.id}`,
    );
    await sql.query('delete from secret_values');
  });

  it('does not decrypt a row copied to another secret, another workspace, or tampered with', async () => {
    const keyring = new SecretsKeyring(newKey());
    await put(keyring, 'one', 'value one');
    await put(keyring, 'two', 'value two');
    await put(keyring, 'one', 'value one', 'ws-other');
    const valueIdOf = async (name: string, workspace = 'ws') => (await streams.load(workspace)).current.get(name)!.valueId;
    const copy = async (from: string, to: string) =>
      sql.query(
        'update secret_values set iv = s.iv, ciphertext = s.ciphertext from secret_values s where s.value_id = $1 and secret_values.value_id = $2',
        [from, to],
      );

    await copy(await valueIdOf('one'), await valueIdOf('two'));
    await expect(read(keyring, 'two')).rejects.toThrow(/secret two \(version 1\) of workspace ws cannot be decrypted/);
    // The same name and version in another workspace: bound to its own workspace, so it does not open either.
    await copy(await valueIdOf('one'), await valueIdOf('one', 'ws-other'));
    await expect(read(keyring, 'one', 'ws-other')).rejects.toThrow(/secret one \(version 1\) of workspace ws-other cannot be decrypted/);
    expect(await read(keyring, 'one')).toBe('value one');
    // One byte of the ciphertext changed.
    await sql.query('update secret_values set ciphertext = set_byte(ciphertext, 0, get_byte(ciphertext, 0) # 1) where value_id = $1', [
      await valueIdOf('one'),
    ]);
    await expect(read(keyring, 'one')).rejects.toThrow(/secret one \(version 1\) of workspace ws cannot be decrypted/);
    await sql.query('delete from secret_values');
  });

  it('leaves nothing visible when the append fails, and the clean-up removes rows no event references', async () => {
    const keyring = new SecretsKeyring(newKey());
    await put(keyring, 'kept', 'kept value');
    const before = await rowCount();
    const head = await store.headPosition();

    // The store refuses the append: the put fails, nothing is appended, its row is discarded.
    const failing: EventStore = Object.assign(Object.create(store) as EventStore, {
      appendToStream: () => Promise.reject(new Error('the event store is down')),
    });
    await expect(put(keyring, 'lost', 'lost value', 'ws', new SecretStreams(failing, systemClock, randomIds))).rejects.toThrow(
      'the event store is down',
    );
    expect(await store.headPosition()).toBe(head);
    expect((await streams.load('ws')).current.has('lost')).toBe(false);
    expect(await rowCount()).toBe(before);

    // A process that died between the row and the append leaves the row behind: inert, then removed.
    await vault(keyring).store({ workspaceId: 'ws', name: 'lost', version: 1 }, 'lost value');
    await vault(keyring).store({ workspaceId: 'ws-gone', name: 'any', version: 1 }, 'nobody references this');
    expect(await rowCount()).toBe(before + 2);
    expect(await maintenance(keyring).runOnce()).toMatchObject({ removed: 0 });
    expect(await maintenance(keyring).runOnce({ graceSeconds: 0 })).toMatchObject({ removed: 2 });
    expect(await rowCount()).toBe(before);
    expect(await read(keyring, 'kept')).toBe('kept value');
  });
});
