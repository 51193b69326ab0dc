import type { SqlClient, SqlQueryable } from '../postgres/sql-client.port.js';
import { READ_MODELS_SCHEMA, versionSuffix, versionTables, type AnyProjectionDefinition } from './projection-definition.js';

/**
 * The projector's catalog, in schema `projector`:
 * - `projections`: per read model, the live version readers see and the version being built;
 * - `versions`: every version ever created (building → live → retired → dropped, or abandoned);
 * - `checkpoints`: per (name, version), the position of the last event applied and how many
 *   log events it has consumed. Positions are fixed-width strings: `collate "C"` orders them.
 */
const CATALOG = [
  'create schema if not exists projector',
  `create schema if not exists ${READ_MODELS_SCHEMA}`,
  `create table if not exists projector.projections (
    name text primary key,
    live_version integer not null,
    building_version integer
  )`,
  `create table if not exists projector.versions (
    name text not null,
    version integer not null,
    definition_version integer not null,
    status text not null check (status in ('building', 'live', 'retired', 'dropped', 'abandoned')),
    rebuild_id uuid,
    created_at timestamptz not null default now(),
    switched_at timestamptz,
    primary key (name, version)
  )`,
  // false while a rebuild bulk-loads without its indexes
  'alter table projector.versions add column if not exists indexed boolean not null default true',
  // a caught-up rebuild holds the live version still until it switches (or the hold expires)
  'alter table projector.projections add column if not exists switch_hold_until timestamptz',
  `create table if not exists projector.checkpoints (
    name text not null,
    version integer not null,
    position text collate "C",
    events_seen bigint not null default 0,
    updated_at timestamptz not null default now(),
    primary key (name, version)
  )`,
  // A batch's first statement: moves a version's checkpoint or raises, so that everything sent
  // after it in the transaction fails with it and nothing waits for its answer (see
  // moveCheckpoint). FLH01: held for a rebuild's switch; FLF01: not this writer's checkpoint.
  `create or replace function projector.move_checkpoint(p_name text, p_version integer, p_expected text, p_next text, p_events bigint)
  returns void language plpgsql as $fn$
  begin
    if exists (select 1 from projector.projections
               where name = p_name and live_version = p_version and switch_hold_until > now()) then
      raise exception 'projection % version % is held for a switch', p_name, p_version using errcode = 'FLH01';
    end if;
    update projector.checkpoints set position = p_next, events_seen = events_seen + p_events, updated_at = now()
      where name = p_name and version = p_version and position is not distinct from p_expected;
    if not found then
      raise exception 'projection % version % is not at checkpoint %', p_name, p_version, coalesce(p_expected, 'start')
        using errcode = 'FLF01';
    end if;
  end
  $fn$`,
];

/** A version's tables, its catalog rows and an empty checkpoint; inside the caller's transaction. */
export async function createVersion(
  tx: SqlQueryable,
  definition: AnyProjectionDefinition,
  version: number,
  status: 'building' | 'live',
  rebuildId: string | null,
): Promise<void> {
  const suffix = versionSuffix(version);
  // A live version is read at once: it needs its indexes from the start. A rebuild adds them when caught up.
  const statements = status === 'live' ? [...definition.tables(suffix), ...definition.indexes(suffix)] : definition.tables(suffix);
  for (const statement of statements) await tx.query(statement);
  await tx.query(
    `insert into projector.versions (name, version, definition_version, status, rebuild_id, switched_at, indexed)
     values ($1, $2, $3, $4, $5, case when $4 = 'live' then now() end, $4 = 'live')`,
    [definition.name, version, definition.version, status, rebuildId],
  );
  await tx.query('insert into projector.checkpoints (name, version) values ($1, $2)', [definition.name, version]);
}

/**
 * Points every reader's view at `version`'s tables; transactional, so readers switch atomically.
 * The views are replaced one after another, so a reader statement must name one view only: one
 * that names two can hold the second while waiting for the first, and deadlock with the switch.
 */
export async function pointViewsAt(tx: SqlQueryable, definition: AnyProjectionDefinition, version: number): Promise<void> {
  const tables = versionTables(definition, version);
  for (const relation of definition.relations) {
    // Drop and create rather than replace: a new definition version may change the columns.
    await tx.query(`drop view if exists ${READ_MODELS_SCHEMA}.${relation}`);
    await tx.query(`create view ${READ_MODELS_SCHEMA}.${relation} as select * from ${tables[relation]}`);
  }
}

/**
 * Creates the catalog and, for a read model seen for the first time, its version 1 as the live
 * one (empty; the projector fills it from the log start). Idempotent, and safe when several
 * processes start at once: one transaction under an advisory lock.
 */
export async function ensureCatalog(sql: SqlClient, definitions: readonly AnyProjectionDefinition[]): Promise<void> {
  await sql.transaction(async (tx) => {
    await tx.query(`select pg_advisory_xact_lock(hashtext('flostra.projector.catalog'))`);
    for (const statement of CATALOG) await tx.query(statement);
    for (const definition of definitions) {
      const { rows } = await tx.query<{ name: string }>('select name from projector.projections where name = $1', [definition.name]);
      if (rows.length > 0) continue;
      await createVersion(tx, definition, 1, 'live', null);
      await pointViewsAt(tx, definition, 1);
      await tx.query('insert into projector.projections (name, live_version) values ($1, 1)', [definition.name]);
    }
  });
}
