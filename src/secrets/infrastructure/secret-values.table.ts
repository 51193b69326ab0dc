import { ensureTables } from '../../postgres/checkpoint-store.js';
import type { SqlClient } from '../../postgres/sql-client.port.js';
import type { SealedSecret, SecretBinding } from './secret-cipher.js';

/** One row of `secret_values`: a sealed value and what it is bound to. Never a value in the clear. */
export interface SecretValueRow extends SecretBinding, SealedSecret {
  readonly valueId: string;
}

type RawRow = {
  value_id: string;
  workspace_id: string;
  name: string;
  version: number;
  key_id: string;
  iv: Uint8Array;
  ciphertext: Uint8Array;
};

const COLUMNS = 'value_id, workspace_id, name, version, key_id, iv, ciphertext';

/**
 * `secret_values` in the read-model Postgres: the ciphertext of every secret version, keyed by
 * a random value id. It is not a read model: the log holds which value id is current, never the
 * value, so this table cannot be rebuilt and must be backed up with the database. A row written
 * for a put whose append failed is referenced by no event and is inert until the clean-up
 * removes it (docs/architecture.md, "Secrets").
 */
export class SecretValues {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<SecretValues> {
    await ensureTables(sql, [
      `create table if not exists secret_values (
        value_id uuid primary key,
        workspace_id text not null,
        name text not null,
        version integer not null,
        key_id text not null,
        iv bytea not null,
        ciphertext bytea not null,
        created_at timestamptz not null default now()
      )`,
      `create index if not exists secret_values_key_idx on secret_values (key_id)`,
      `create index if not exists secret_values_created_idx on secret_values (created_at)`,
    ]);
    return new SecretValues(sql);
  }

  async insert(row: SecretValueRow): Promise<void> {
    await this.sql.query(`insert into secret_values (${COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7)`, [
      row.valueId,
      row.workspaceId,
      row.name,
      row.version,
      row.keyId,
      row.iv,
      row.ciphertext,
    ]);
  }

  async get(valueId: string): Promise<SecretValueRow | null> {
    const { rows } = await this.sql.query<RawRow>(`select ${COLUMNS} from secret_values where value_id = $1`, [valueId]);
    return rows.length === 0 ? null : toRow(rows[0]);
  }

  async remove(valueIds: readonly string[]): Promise<number> {
    if (valueIds.length === 0) return 0;
    const { rows } = await this.sql.query<{ value_id: string }>(
      'delete from secret_values where value_id in (select (jsonb_array_elements_text($1::jsonb))::uuid) returning value_id',
      [JSON.stringify(valueIds)],
    );
    return rows.length;
  }

  /** How many rows each key encrypted. */
  async countByKey(): Promise<Map<string, number>> {
    const { rows } = await this.sql.query<{ key_id: string; n: string | number }>(
      'select key_id, count(*) as n from secret_values group by key_id order by key_id',
    );
    return new Map(rows.map((row) => [row.key_id, Number(row.n)]));
  }

  /** Up to `limit` rows encrypted by any other key than `keyId`, in value id order after `after` (a page). */
  async underOtherKeys(keyId: string, after: string | null, limit: number): Promise<SecretValueRow[]> {
    const { rows } = await this.sql.query<RawRow>(
      `select ${COLUMNS} from secret_values where key_id <> $1 and ($2::uuid is null or value_id > $2::uuid) order by value_id limit $3`,
      [keyId, after, limit],
    );
    return rows.map(toRow);
  }

  /** Replaces a row's ciphertext, if it is still sealed under `fromKeyId` (two re-encryptions at once: one wins). */
  async reseal(valueId: string, fromKeyId: string, sealed: SealedSecret): Promise<boolean> {
    const { rows } = await this.sql.query<{ value_id: string }>(
      'update secret_values set key_id = $3, iv = $4, ciphertext = $5 where value_id = $1 and key_id = $2 returning value_id',
      [valueId, fromKeyId, sealed.keyId, sealed.iv, sealed.ciphertext],
    );
    return rows.length === 1;
  }

  /** Workspaces with rows written more than `graceSeconds` ago (by the database's clock). */
  async workspacesWithRowsOlderThan(graceSeconds: number): Promise<string[]> {
    const { rows } = await this.sql.query<{ workspace_id: string }>(
      `select distinct workspace_id from secret_values where created_at < now() - make_interval(secs => $1) order by workspace_id`,
      [graceSeconds],
    );
    return rows.map((row) => row.workspace_id);
  }

  /**
   * Removes a workspace's rows written more than `graceSeconds` ago whose value id is not in
   * `referenced`; the grace keeps a row whose put is still on its way to the log.
   */
  async removeUnreferenced(workspaceId: string, referenced: readonly string[], graceSeconds: number): Promise<number> {
    const { rows } = await this.sql.query<{ value_id: string }>(
      `delete from secret_values
       where workspace_id = $1 and created_at < now() - make_interval(secs => $3)
         and value_id not in (select (jsonb_array_elements_text($2::jsonb))::uuid)
       returning value_id`,
      [workspaceId, JSON.stringify(referenced), graceSeconds],
    );
    return rows.length;
  }
}

function toRow(row: RawRow): SecretValueRow {
  return {
    valueId: row.value_id,
    workspaceId: row.workspace_id,
    name: row.name,
    version: Number(row.version),
    keyId: row.key_id,
    iv: Buffer.from(row.iv),
    ciphertext: Buffer.from(row.ciphertext),
  };
}
