import type { Position } from '../src/core/event-store.port.js';
import { reusable, type SqlTransaction } from '../src/postgres/sql-client.port.js';
import type { BatchMemo, EventHandlers, ProjectionDefinition, ProjectionSource } from '../src/projector/projection-definition.js';
import { scheduleDecider, type ScheduleState } from '../src/schedules/domain/schedule.decider.js';
import { parseScheduleEvent, SCHEDULE_EVENT_TYPES, type ScheduleEvent } from '../src/schedules/domain/schedule.events.js';
import { SCHEDULE_STREAM_PREFIX } from '../src/schedules/domain/schedule-identity.js';

/** A schedule event as the read model receives it: validated by the schedule parser, with its stream and place in the log. */
export type ProjectedScheduleEvent = ScheduleEvent & { position: Position; streamId: string };

export interface ScheduleDocument {
  state: ScheduleState;
  position: Position;
}

interface SchedulesBatch {
  documents: Map<string, ScheduleDocument>;
  changed: Set<string>;
}

const scheduleEvents: ProjectionSource<ProjectedScheduleEvent> = {
  decode: (recorded) =>
    recorded.streamId.startsWith(SCHEDULE_STREAM_PREFIX)
      ? { ...parseScheduleEvent(recorded), position: recorded.position, streamId: recorded.streamId }
      : null,
};

function apply(batch: SchedulesBatch, event: ProjectedScheduleEvent): void {
  const previous = batch.documents.get(event.streamId);
  const state = scheduleDecider.evolve(previous?.state ?? scheduleDecider.initialState(), event);
  batch.documents.set(event.streamId, { state, position: event.position });
  batch.changed.add(event.streamId);
}

/**
 * `schedules`: one row per schedule stream, the write side's own fold as a jsonb document, for
 * the list. A deleted schedule keeps its row (a new definition of the name folds on from it) and
 * leaves the list. The detail is read from the stream itself.
 */
export const schedulesProjection: ProjectionDefinition<SchedulesBatch, ScheduleDocument, ProjectedScheduleEvent> = {
  name: 'schedules',
  source: scheduleEvents,
  version: 1,
  relations: ['schedules'],

  tables: (suffix) => [
    `create table read_models.schedules${suffix} (
      stream_id text primary key,
      workspace_id text not null,
      name text collate "C" not null,
      active boolean not null,
      position text collate "C" not null,
      state jsonb not null
    )`,
  ],

  indexes: (suffix) => [`create index schedules${suffix}_workspace_idx on read_models.schedules${suffix} (workspace_id, name)`],

  async begin(tx, tables, events, memo: BatchMemo<ScheduleDocument>) {
    const documents = new Map<string, ScheduleDocument>();
    const unknown: string[] = [];
    for (const streamId of new Set(events.map((e) => e.streamId))) {
      const known = memo.get(streamId);
      if (known === undefined) unknown.push(streamId);
      else documents.set(streamId, known);
    }
    if (unknown.length > 0) {
      const { rows } = await tx.query<{ stream_id: string; state: ScheduleState; position: string }>(
        reusable(`select stream_id, state, position from ${tables.schedules} where stream_id = any($1::text[])`),
        [unknown],
      );
      for (const row of rows) documents.set(row.stream_id, { state: row.state, position: row.position });
    }
    return { documents, changed: new Set() };
  },

  handlers: Object.fromEntries(SCHEDULE_EVENT_TYPES.map((type) => [type, apply])) as unknown as EventHandlers<
    SchedulesBatch,
    ProjectedScheduleEvent
  >,

  commit(tx: SqlTransaction, tables, batch, memo) {
    if (batch.changed.size === 0) return;
    const rows = [...batch.changed].map((streamId) => {
      const { state, position } = batch.documents.get(streamId)!;
      return { stream_id: streamId, workspace_id: state.workspaceId, name: state.name, active: state.status === 'active', position, state };
    });
    tx.queue(
      reusable(`insert into ${tables.schedules} as t (stream_id, workspace_id, name, active, position, state)
       select r.stream_id, r.workspace_id, r.name, r.active, r.position, r.state
       from jsonb_to_recordset($1::jsonb) as r(stream_id text, workspace_id text, name text, active boolean, position text, state jsonb)
       on conflict (stream_id) do update set active = excluded.active, position = excluded.position, state = excluded.state`),
      [JSON.stringify(rows)],
    );
    for (const streamId of batch.changed) memo.set(streamId, batch.documents.get(streamId)!);
  },

  // Schedules are not executions: retention keeps them (one may still name an expired last execution).
  expire() {},
};
