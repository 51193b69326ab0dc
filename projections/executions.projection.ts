import type { Position } from '../src/core/event-store.port.js';
import { traceIdOf } from '../src/core/traceparent.js';
import { reusable, type SqlTransaction } from '../src/postgres/sql-client.port.js';
import { evolve, inFoldOrder, initialState, type StartedExecution } from '../src/executions/domain/execution.state.js';
import type { ProjectionDefinition, VersionTables } from '../src/projector/projection-definition.js';
import { executionEvents, recallEarlierExecutions, sameHandlerForEveryType, type ProjectedEvent } from './execution-events.js';

/** One execution as the read model keeps it: the write side's own fold, and where it stands in the log. */
export interface ExecutionDocument {
  state: StartedExecution;
  /** Position and stream revision of the last event applied. */
  position: Position;
  revision: number;
  /** Position of ExecutionStarted: the list's order and cursor (clock-independent, unique). */
  createdPosition: Position;
  /** The trace the start belongs to (from ExecutionStarted's `traceparent`); null when it was not traced. */
  traceId: string | null;
}

interface ExecutionsBatch {
  documents: Map<string, ExecutionDocument>;
  changed: Set<string>;
}

interface DocumentRow {
  execution_id: string;
  state: StartedExecution;
  position: string;
  revision: number;
  created_position: string;
  trace_id: string | null;
}

/**
 * `executions`: one row per execution for the detail and the list. The detail is the jsonb
 * document folded with the domain's `evolve` — the fold the write side runs, less its count of
 * the history's bytes — so the view equals the stream's fold by construction; indexed columns
 * serve the list's filters and order.
 */
export const executionsProjection: ProjectionDefinition<ExecutionsBatch, ExecutionDocument, ProjectedEvent> = {
  name: 'executions',
  source: executionEvents,
  // 2: the document carries the quota fields of the state (`awaitingSlot`, `slotAttemptId`, `runStartedAt`).
  // 3: and `scheduledBy`, the schedule fire that started the execution.
  // 4: `trace_id`, the trace of the start (ExecutionStarted's `traceparent`).
  // 5: and the execution's tasks and waits; `has_open_tasks` finds those with tasks to hand out.
  // 6: an index on `ended_at` for retention's sweep.
  // 7: and `mapItems`, the outputs of map items that succeeded.
  // 8: and the parent and children of sub-workflows; `parent_execution_id` finds an execution's children.
  // 9: and its durable timers, signals and signal waits.
  // 10: and each task's latest progress entries (`recentProgress`).
  version: 10,
  relations: ['executions'],

  tables: (suffix) => [
    `create table read_models.executions${suffix} (
      execution_id text primary key,
      workspace_id text not null,
      workflow_name text not null,
      workflow_revision integer not null,
      status text not null,
      cancel_requested boolean not null,
      attempt_count integer not null,
      started_at timestamptz not null,
      updated_at timestamptz not null,
      ended_at timestamptz,
      created_position text collate "C" not null,
      position text collate "C" not null,
      revision integer not null,
      trace_id text,
      has_open_tasks boolean not null default false,
      parent_execution_id text,
      state jsonb not null
    )`,
  ],

  indexes: (suffix) => [
    `create index executions${suffix}_workspace_idx on read_models.executions${suffix} (workspace_id, created_position)`,
    `create index executions${suffix}_status_idx on read_models.executions${suffix} (workspace_id, status, created_position)`,
    `create index executions${suffix}_workflow_idx on read_models.executions${suffix} (workspace_id, workflow_name, created_position)`,
    `create index executions${suffix}_open_tasks_idx on read_models.executions${suffix} (execution_id) where has_open_tasks`,
    `create index executions${suffix}_ended_idx on read_models.executions${suffix} (ended_at) where ended_at is not null`,
    `create index executions${suffix}_parent_idx on read_models.executions${suffix} (parent_execution_id) where parent_execution_id is not null`,
  ],

  async begin(tx, tables, events, memo) {
    // The documents of executions started before the batch: remembered from earlier batches, or read.
    const { remembered: documents, unknown } = recallEarlierExecutions(events, memo);
    if (unknown.length > 0) {
      const { rows } = await tx.query<DocumentRow>(
        reusable(
          `select execution_id, state, position, revision, created_position, trace_id from ${tables.executions} where execution_id = any($1::text[])`,
        ),
        [unknown],
      );
      for (const row of rows) {
        documents.set(row.execution_id, {
          // Folded next: in the key order evolve builds, not jsonb's (see inFoldOrder).
          state: inFoldOrder(row.state),
          position: row.position,
          revision: row.revision,
          createdPosition: row.created_position,
          traceId: row.trace_id,
        });
      }
    }
    return { documents, changed: new Set() };
  },

  handlers: sameHandlerForEveryType((batch, event) => {
    const previous = batch.documents.get(event.executionId);
    const state = evolve(previous?.state ?? initialState(), event);
    // The decider never lets an event precede ExecutionStarted; nothing to show if one did.
    if (state.status === 'not_started') return;
    const createdPosition = previous?.createdPosition ?? event.position;
    const traceId = previous?.traceId ?? (event.type === 'ExecutionStarted' ? traceIdOf(event.metadata['traceparent']) : null);
    batch.documents.set(event.executionId, { state, position: event.position, revision: event.revision, createdPosition, traceId });
    batch.changed.add(event.executionId);
  }),

  commit(tx, tables, batch, memo) {
    if (batch.changed.size === 0) return;
    const rows = [...batch.changed].map((id) => toRow(id, batch.documents.get(id)!));
    upsert(tx, tables, rows);
    // Documents are immutable values (evolve returns new states): safe to hand to the next batch.
    for (const id of batch.changed) memo.set(id, batch.documents.get(id)!);
  },

  expire(tx, tables, { executionIds }, memo) {
    if (executionIds.length === 0) return;
    for (const id of executionIds) memo.delete(id);
    tx.queue(reusable(`delete from ${tables.executions} where execution_id = any($1::text[])`), [executionIds]);
  },
};

function toRow(executionId: string, { state, position, revision, createdPosition, traceId }: ExecutionDocument) {
  return {
    execution_id: executionId,
    workspace_id: state.workspaceId,
    workflow_name: state.workflow.name,
    workflow_revision: state.workflow.revision,
    status: state.status,
    cancel_requested: state.cancelRequest !== null,
    attempt_count: state.attempts.length,
    started_at: state.startedAt,
    updated_at: state.updatedAt,
    ended_at: state.endedAt,
    created_position: createdPosition,
    position,
    revision,
    trace_id: traceId,
    has_open_tasks: Object.values(state.tasks ?? {}).some((t) => t.status === 'scheduled' || t.status === 'claimed'),
    parent_execution_id: state.parent?.executionId ?? null,
    state,
  };
}

/** All rows of a batch in one statement: the batch's JSON expands into a record set. */
function upsert(tx: SqlTransaction, tables: VersionTables, rows: ReturnType<typeof toRow>[]): void {
  tx.queue(
    reusable(`insert into ${tables.executions} as t (execution_id, workspace_id, workflow_name, workflow_revision, status, cancel_requested,
       attempt_count, started_at, updated_at, ended_at, created_position, position, revision, trace_id, has_open_tasks, parent_execution_id, state)
     select r.execution_id, r.workspace_id, r.workflow_name, r.workflow_revision, r.status, r.cancel_requested,
       r.attempt_count, r.started_at, r.updated_at, r.ended_at, r.created_position, r.position, r.revision, r.trace_id, r.has_open_tasks, r.parent_execution_id, r.state
     from jsonb_to_recordset($1::jsonb) as r(execution_id text, workspace_id text, workflow_name text, workflow_revision integer,
       status text, cancel_requested boolean, attempt_count integer, started_at timestamptz, updated_at timestamptz,
       ended_at timestamptz, created_position text, position text, revision integer, trace_id text, has_open_tasks boolean, parent_execution_id text, state jsonb)
     on conflict (execution_id) do update set
       status = excluded.status, cancel_requested = excluded.cancel_requested, attempt_count = excluded.attempt_count,
       updated_at = excluded.updated_at, ended_at = excluded.ended_at, position = excluded.position, revision = excluded.revision,
       has_open_tasks = excluded.has_open_tasks, state = excluded.state`),
    [JSON.stringify(rows)],
  );
}
