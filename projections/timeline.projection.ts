import { reusable } from '../src/postgres/sql-client.port.js';
import type { ProjectionDefinition } from '../src/projector/projection-definition.js';
import { executionEvents, recallEarlierExecutions, sameHandlerForEveryType, type ProjectedEvent } from './execution-events.js';

interface TimelineRow {
  position: string;
  event_id: string;
  execution_id: string;
  workspace_id: string;
  type: string;
  revision: number;
  recorded_at: string;
  data: unknown;
}

interface TimelineBatch {
  /** Owner workspace of every execution the batch touches. */
  owners: Map<string, string>;
  newOwners: Map<string, string>;
  rows: TimelineRow[];
}

/** The log handed the projector an event of an execution it never saw start: a corrupt log, never skipped. */
export class OrphanEventError extends Error {
  constructor(event: ProjectedEvent) {
    super(`event ${event.eventId} (${event.type} at ${event.position}) belongs to execution ${event.executionId}, which never started`);
  }
}

/**
 * `timeline`: every execution event, keyed by its global position in the event store. History
 * pages and SSE read it; an SSE `id:` is this position, which a rebuild copies from the log
 * unchanged (promise 8 relies on it, docs/architecture.md). `timeline_owners` maps each execution to its workspace:
 * only ExecutionStarted carries it, and it authorizes reads of everything else.
 */
export const timelineProjection: ProjectionDefinition<TimelineBatch, string, ProjectedEvent> = {
  name: 'timeline',
  source: executionEvents,
  // 2: events are stored as read now (ExecutionStarted's schema version 2), so history shows one shape.
  version: 2,
  relations: ['timeline', 'timeline_owners'],
  feedsLiveStreams: true,

  tables: (suffix) => [
    `create table read_models.timeline${suffix} (
      position text collate "C" not null,
      event_id uuid not null,
      execution_id text not null,
      workspace_id text not null,
      type text not null,
      revision integer not null,
      recorded_at timestamptz not null,
      data jsonb not null
    )`,
    `create table read_models.timeline_owners${suffix} (
      execution_id text primary key,
      workspace_id text not null
    )`,
  ],

  indexes: (suffix) => [
    `alter table read_models.timeline${suffix} add constraint timeline${suffix}_pkey primary key (position)`,
    `create index timeline${suffix}_execution_idx on read_models.timeline${suffix} (execution_id, position)`,
    `create index timeline${suffix}_workspace_idx on read_models.timeline${suffix} (workspace_id, position)`,
  ],

  async begin(tx, tables, events, memo) {
    // An execution's workspace never changes: once known, it is remembered.
    const { remembered: owners, unknown } = recallEarlierExecutions(events, memo);
    if (unknown.length > 0) {
      const { rows } = await tx.query<{ execution_id: string; workspace_id: string }>(
        reusable(`select execution_id, workspace_id from ${tables.timeline_owners} where execution_id = any($1::text[])`),
        [unknown],
      );
      for (const row of rows) {
        owners.set(row.execution_id, row.workspace_id);
        memo.set(row.execution_id, row.workspace_id);
      }
    }
    return { owners, newOwners: new Map(), rows: [] };
  },

  handlers: sameHandlerForEveryType((batch, event) => {
    if (event.type === 'ExecutionStarted') {
      batch.owners.set(event.executionId, event.data.workspaceId);
      batch.newOwners.set(event.executionId, event.data.workspaceId);
    }
    const workspaceId = batch.owners.get(event.executionId);
    if (workspaceId === undefined) throw new OrphanEventError(event);
    batch.rows.push({
      position: event.position,
      event_id: event.eventId,
      execution_id: event.executionId,
      workspace_id: workspaceId,
      type: event.type,
      revision: event.revision,
      recorded_at: event.recordedAt,
      data: event.data,
    });
  }),

  commit(tx, tables, batch, memo) {
    for (const [executionId, workspaceId] of batch.newOwners) memo.set(executionId, workspaceId);
    if (batch.newOwners.size > 0) {
      const owners = [...batch.newOwners].map(([execution_id, workspace_id]) => ({ execution_id, workspace_id }));
      tx.queue(
        reusable(`insert into ${tables.timeline_owners} (execution_id, workspace_id)
         select r.execution_id, r.workspace_id from jsonb_to_recordset($1::jsonb) as r(execution_id text, workspace_id text)`),
        [JSON.stringify(owners)],
      );
    }
    if (batch.rows.length === 0) return;
    tx.queue(
      reusable(`insert into ${tables.timeline} (position, event_id, execution_id, workspace_id, type, revision, recorded_at, data)
       select r.position, r.event_id, r.execution_id, r.workspace_id, r.type, r.revision, r.recorded_at, r.data
       from jsonb_to_recordset($1::jsonb) as r(position text, event_id uuid, execution_id text, workspace_id text,
         type text, revision integer, recorded_at timestamptz, data jsonb)`),
      [JSON.stringify(batch.rows)],
    );
  },

  expire(tx, tables, { executionIds }, memo) {
    if (executionIds.length === 0) return;
    for (const id of executionIds) memo.delete(id);
    tx.queue(reusable(`delete from ${tables.timeline} where execution_id = any($1::text[])`), [executionIds]);
    tx.queue(reusable(`delete from ${tables.timeline_owners} where execution_id = any($1::text[])`), [executionIds]);
  },
};
