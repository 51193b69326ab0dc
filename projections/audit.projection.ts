import { reusable } from '../src/postgres/sql-client.port.js';
import type { ProjectionDefinition } from '../src/projector/projection-definition.js';
import { AUDITED, type AuditDetail, type AuditedEvent, auditedEvents } from './audit-events.js';

/** The workspace and workflow of an execution, as its start recorded them. */
export interface AuditOwner {
  workspaceId: string;
  workflow: string;
}

interface AuditRow {
  position: string;
  workspace_id: string;
  recorded_at: string;
  actor: string;
  action: string;
  execution_id: string | null;
  workflow: string | null;
  detail: AuditDetail;
}

interface AuditBatch {
  /** Owner of every execution the batch's events name, where known. */
  owners: Map<string, AuditOwner>;
  newOwners: Map<string, AuditOwner>;
  rows: AuditRow[];
}

/** An execution event that names no workspace, of an execution whose start the log never showed: a corrupt log. */
export class UnattributedAuditEventError extends Error {
  constructor(event: AuditedEvent) {
    super(`event ${event.action} at ${event.position} of execution ${event.executionId} names no workspace, and its start is unknown`);
  }
}

/**
 * `audit`: who did what, when, in which workspace — one row per audited event of the log
 * (audit-events.ts decides which, its actor and its summary), keyed by its global position.
 * `audit_executions` keeps each execution's workspace and workflow from its start: every
 * execution event shows its workflow, and one recorded without `workspaceId` in its metadata is
 * still filed under its execution's workspace. Rows hold positions and times copied from the
 * log, so a rebuild gives the same trail.
 */
export const auditProjection: ProjectionDefinition<AuditBatch, AuditOwner, AuditedEvent> = {
  name: 'audit',
  source: auditedEvents,
  // 2: an index on `recorded_at`, by which retention prunes.
  version: 2,
  relations: ['audit', 'audit_executions'],

  tables: (suffix) => [
    `create table read_models.audit${suffix} (
      position text collate "C" not null,
      workspace_id text not null,
      recorded_at timestamptz not null,
      actor text not null,
      action text not null,
      execution_id text,
      workflow text,
      detail jsonb not null
    )`,
    `create table read_models.audit_executions${suffix} (
      execution_id text primary key,
      workspace_id text not null,
      workflow text not null
    )`,
  ],

  indexes: (suffix) => [
    `alter table read_models.audit${suffix} add constraint audit${suffix}_pkey primary key (position)`,
    `create index audit${suffix}_workspace_idx on read_models.audit${suffix} (workspace_id, position)`,
    `create index audit${suffix}_recorded_idx on read_models.audit${suffix} (recorded_at)`,
  ],

  async begin(tx, tables, events, memo) {
    // An execution's owner never changes: remembered once known, read for those started earlier.
    const owners = new Map<string, AuditOwner>();
    const startedHere = new Set(events.flatMap((e) => (e.starts !== null && e.executionId !== null ? [e.executionId] : [])));
    const unknown: string[] = [];
    for (const id of new Set(events.flatMap((e) => (e.executionId === null ? [] : [e.executionId])))) {
      if (startedHere.has(id)) continue;
      const owner = memo.get(id);
      if (owner === undefined) unknown.push(id);
      else owners.set(id, owner);
    }
    if (unknown.length > 0) {
      const { rows } = await tx.query<{ execution_id: string; workspace_id: string; workflow: string }>(
        reusable(`select execution_id, workspace_id, workflow from ${tables.audit_executions} where execution_id = any($1::text[])`),
        [unknown],
      );
      for (const row of rows) {
        const owner = { workspaceId: row.workspace_id, workflow: row.workflow };
        owners.set(row.execution_id, owner);
        memo.set(row.execution_id, owner);
      }
    }
    return { owners, newOwners: new Map(), rows: [] };
  },

  handlers: {
    [AUDITED]: (batch, event) => {
      if (event.starts !== null && event.executionId !== null) {
        batch.owners.set(event.executionId, event.starts);
        batch.newOwners.set(event.executionId, event.starts);
      }
      const owner = event.executionId === null ? undefined : batch.owners.get(event.executionId);
      const workspaceId = event.workspaceId ?? owner?.workspaceId;
      if (workspaceId === undefined) throw new UnattributedAuditEventError(event);
      batch.rows.push({
        position: event.position,
        workspace_id: workspaceId,
        recorded_at: event.recordedAt,
        actor: event.actor,
        action: event.action,
        execution_id: event.executionId,
        workflow: event.workflow ?? owner?.workflow ?? null,
        detail: event.detail,
      });
    },
  },

  commit(tx, tables, batch, memo) {
    for (const [executionId, owner] of batch.newOwners) memo.set(executionId, owner);
    if (batch.newOwners.size > 0) {
      const owners = [...batch.newOwners].map(([execution_id, { workspaceId, workflow }]) => ({
        execution_id,
        workspace_id: workspaceId,
        workflow,
      }));
      tx.queue(
        reusable(`insert into ${tables.audit_executions} (execution_id, workspace_id, workflow)
         select r.execution_id, r.workspace_id, r.workflow
         from jsonb_to_recordset($1::jsonb) as r(execution_id text, workspace_id text, workflow text)`),
        [JSON.stringify(owners)],
      );
    }
    if (batch.rows.length === 0) return;
    tx.queue(
      reusable(`insert into ${tables.audit} (position, workspace_id, recorded_at, actor, action, execution_id, workflow, detail)
       select r.position, r.workspace_id, r.recorded_at, r.actor, r.action, r.execution_id, r.workflow, r.detail
       from jsonb_to_recordset($1::jsonb) as r(position text, workspace_id text, recorded_at timestamptz, actor text,
         action text, execution_id text, workflow text, detail jsonb)`),
      [JSON.stringify(batch.rows)],
    );
  },

  // Pruned by the same horizon: the expired executions' rows, and every row recorded before it
  // (workflow and secret actions too). The fact's time is in the log, so a rebuild prunes alike.
  expire(tx, tables, { executionIds, before }, memo) {
    for (const id of executionIds) memo.delete(id);
    tx.queue(reusable(`delete from ${tables.audit} where recorded_at < $2::timestamptz or execution_id = any($1::text[])`), [
      executionIds,
      before,
    ]);
    if (executionIds.length > 0)
      tx.queue(reusable(`delete from ${tables.audit_executions} where execution_id = any($1::text[])`), [executionIds]);
  },
};
