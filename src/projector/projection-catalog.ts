import type { Position } from '../core/event-store.port.js';
import { reusable, sqlErrorInfo, type SqlClient, type SqlQueryable, type SqlTransaction } from '../postgres/sql-client.port.js';
import { versionSuffix, versionTables, type AnyProjectionDefinition } from './projection-definition.js';
import { createVersion, pointViewsAt } from './projector.schema.js';

export type VersionStatus = 'building' | 'live' | 'retired' | 'dropped' | 'abandoned';

export interface VersionInfo {
  name: string;
  version: number;
  definitionVersion: number;
  status: VersionStatus;
  rebuildId: string | null;
  createdAt: string;
  switchedAt: string | null;
  position: Position | null;
  eventsSeen: number;
  checkpointAt: string | null;
}

export interface CatalogEntry {
  name: string;
  liveVersion: number;
  buildingVersion: number | null;
  versions: VersionInfo[];
}

/** Every read model's versions with their checkpoints, as one snapshot. */
export async function readCatalog(sql: SqlQueryable): Promise<Map<string, CatalogEntry>> {
  const { rows } = await sql.query<{
    name: string;
    live_version: number;
    building_version: number | null;
    version: number;
    definition_version: number;
    status: VersionStatus;
    rebuild_id: string | null;
    created_at: Date | string;
    switched_at: Date | string | null;
    position: string | null;
    events_seen: string | number | null;
    updated_at: Date | string | null;
  }>(
    `select p.name, p.live_version, p.building_version, v.version, v.definition_version, v.status, v.rebuild_id::text as rebuild_id,
            v.created_at, v.switched_at, c.position, c.events_seen, c.updated_at
     from projector.projections p
     join projector.versions v on v.name = p.name
     left join projector.checkpoints c on c.name = v.name and c.version = v.version
     order by p.name, v.version`,
  );
  const catalog = new Map<string, CatalogEntry>();
  for (const row of rows) {
    let entry = catalog.get(row.name);
    if (entry === undefined) {
      entry = { name: row.name, liveVersion: row.live_version, buildingVersion: row.building_version, versions: [] };
      catalog.set(row.name, entry);
    }
    entry.versions.push({
      name: row.name,
      version: row.version,
      definitionVersion: row.definition_version,
      status: row.status,
      rebuildId: row.rebuild_id,
      createdAt: iso(row.created_at)!,
      switchedAt: iso(row.switched_at),
      position: row.position,
      eventsSeen: Number(row.events_seen ?? 0),
      checkpointAt: iso(row.updated_at),
    });
  }
  return catalog;
}

/** The position the live version of `name` has applied (null before its first event). */
export async function liveCheckpoint(sql: SqlQueryable, name: string): Promise<Position | null> {
  const { rows } = await sql.query<{ position: string | null }>(
    `select c.position from projector.projections p
     join projector.checkpoints c on c.name = p.name and c.version = p.live_version
     where p.name = $1`,
    [name],
  );
  return rows[0]?.position ?? null;
}

/** Where a version stands, and whether it has its indexes yet; null once it is gone. */
export async function readCheckpoint(
  sql: SqlQueryable,
  name: string,
  version: number,
): Promise<{ position: Position | null; indexed: boolean } | null> {
  const { rows } = await sql.query<{ position: string | null; indexed: boolean }>(
    `select c.position, v.indexed from projector.checkpoints c
     join projector.versions v on v.name = c.name and v.version = c.version
     where c.name = $1 and c.version = $2`,
    [name, version],
  );
  return rows[0] ?? null;
}

/** A caught-up rebuild's indexes, in the caller's transaction: bulk load first, index once. */
export async function createIndexes(tx: SqlQueryable, definition: AnyProjectionDefinition, version: number): Promise<void> {
  for (const statement of definition.indexes(versionSuffix(version))) await tx.query(statement);
  await tx.query('update projector.versions set indexed = true where name = $1 and version = $2', [definition.name, version]);
}

const MOVE_CHECKPOINT_SQL = reusable('select projector.move_checkpoint($1, $2, $3, $4, $5)');

/** SQLSTATEs `projector.move_checkpoint` raises (see projector.schema.ts). */
const CHECKPOINT_HELD = 'FLH01';
const CHECKPOINT_FENCED = 'FLF01';

/**
 * Moves a version's checkpoint from `expected` to `next`, first thing in a batch's transaction,
 * without waiting for the answer. The row lock serializes writers of one version, and the
 * compare makes a second writer (a stale runner, a retired live version whose row is gone) fail
 * instead of applying twice. A live version does not move while a caught-up rebuild holds it
 * for its switch. A refusal raises: every statement after it fails with the transaction, which
 * rejects with the refusal (see `checkpointRefusal`).
 */
export function moveCheckpoint(
  tx: SqlTransaction,
  name: string,
  version: number,
  expected: Position | null,
  next: Position,
  events: number,
): void {
  tx.queue(MOVE_CHECKPOINT_SQL, [name, version, expected, next, events]);
}

/** Why a transaction's `moveCheckpoint` refused: 'held' (retry soon), 'fenced' (stop), or null for another failure. */
export function checkpointRefusal(error: unknown): 'held' | 'fenced' | null {
  const { code } = sqlErrorInfo(error);
  return code === CHECKPOINT_HELD ? 'held' : code === CHECKPOINT_FENCED ? 'fenced' : null;
}

/**
 * A rebuild that has reached the head of the log but not the live version (which keeps moving
 * under load) asks the live version to stand still until it has caught up and switched. The hold
 * expires by itself, so a builder that dies holds nothing for long.
 */
export async function holdLiveForSwitch(sql: SqlQueryable, name: string, buildingVersion: number, holdMs: number): Promise<void> {
  await sql.query(
    `update projector.projections set switch_hold_until = now() + make_interval(secs => $3::double precision / 1000)
     where name = $1 and building_version = $2`,
    [name, buildingVersion, holdMs],
  );
}

/**
 * Inside the builder's batch transaction: when the builder has applied at least as much of the
 * log as the live version, make it the live one (promise 9, docs/architecture.md: readers switch atomically, with the
 * builder's final batch). Locking the live checkpoint holds the live runner still meanwhile, and
 * deleting it fences that runner out: its next batch finds no checkpoint and stops.
 */
export async function switchIfCaughtUp(
  tx: SqlQueryable,
  definition: AnyProjectionDefinition,
  version: number,
  position: Position,
): Promise<boolean> {
  const { rows: projection } = await tx.query<{ live_version: number; building_version: number | null }>(
    'select live_version, building_version from projector.projections where name = $1 for update',
    [definition.name],
  );
  const live = projection[0];
  if (live === undefined || live.building_version !== version) return false;
  const { rows: checkpoint } = await tx.query<{ position: string | null }>(
    'select position from projector.checkpoints where name = $1 and version = $2 for update',
    [definition.name, live.live_version],
  );
  const livePosition = checkpoint[0]?.position ?? null;
  if (livePosition !== null && position < livePosition) return false;
  await pointViewsAt(tx, definition, version);
  await tx.query('update projector.projections set live_version = $2, building_version = null, switch_hold_until = null where name = $1', [
    definition.name,
    version,
  ]);
  await tx.query(`update projector.versions set status = 'retired' where name = $1 and version = $2`, [definition.name, live.live_version]);
  await tx.query(`update projector.versions set status = 'live', switched_at = now() where name = $1 and version = $2`, [
    definition.name,
    version,
  ]);
  await tx.query('delete from projector.checkpoints where name = $1 and version = $2', [definition.name, live.live_version]);
  return true;
}

/** Drops the tables of retired and abandoned versions; idempotent, so any process may run it. */
export async function dropUnusedVersions(sql: SqlClient, definition: AnyProjectionDefinition): Promise<number[]> {
  const { rows } = await sql.query<{ version: number }>(
    `select version from projector.versions where name = $1 and status in ('retired', 'abandoned')`,
    [definition.name],
  );
  for (const { version } of rows) {
    await sql.transaction(async (tx) => {
      for (const table of Object.values(versionTables(definition, version))) await tx.query(`drop table if exists ${table}`);
      await tx.query('delete from projector.checkpoints where name = $1 and version = $2', [definition.name, version]);
      await tx.query(`update projector.versions set status = 'dropped' where name = $1 and version = $2`, [definition.name, version]);
    });
  }
  return rows.map((row) => row.version);
}

/**
 * Creates the next version's tables beside the live one and marks it as being built. A rebuild
 * already under way answers for this request too: it will end with everything the log holds.
 * A building version of an older definition is abandoned (its tables dropped later) and replaced.
 */
export async function requestRebuild(
  sql: SqlClient,
  definition: AnyProjectionDefinition,
  rebuildId: string,
): Promise<{ rebuildId: string; version: number; created: boolean }> {
  return sql.transaction(async (tx) => {
    const { rows } = await tx.query<{ building_version: number | null }>(
      'select building_version from projector.projections where name = $1 for update',
      [definition.name],
    );
    if (rows[0] === undefined) throw new Error(`projection ${definition.name} is not in the catalog`);
    const building = rows[0].building_version;
    if (building !== null) {
      const { rows: current } = await tx.query<{ rebuild_id: string; definition_version: number }>(
        'select rebuild_id::text as rebuild_id, definition_version from projector.versions where name = $1 and version = $2',
        [definition.name, building],
      );
      if (current[0] !== undefined && current[0].definition_version >= definition.version) {
        return { rebuildId: current[0].rebuild_id, version: building, created: false };
      }
      await tx.query(`update projector.versions set status = 'abandoned' where name = $1 and version = $2`, [definition.name, building]);
    }
    const { rows: max } = await tx.query<{ version: number }>('select max(version) as version from projector.versions where name = $1', [
      definition.name,
    ]);
    const version = (max[0]?.version ?? 0) + 1;
    await createVersion(tx, definition, version, 'building', rebuildId);
    await tx.query('update projector.projections set building_version = $2 where name = $1', [definition.name, version]);
    return { rebuildId, version, created: true };
  });
}

function iso(value: Date | string | null): string | null {
  if (value === null) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
