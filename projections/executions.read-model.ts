import type { Position } from '../src/core/event-store.port.js';
import type { StartedExecution, TaskRecord } from '../src/executions/domain/execution.state.js';
import type { SqlQueryable } from '../src/postgres/sql-client.port.js';
import type { ExecutionDocument } from './executions.projection.js';

export interface ExecutionSummary {
  executionId: string;
  workspaceId: string;
  workflowName: string;
  workflowRevision: number;
  status: StartedExecution['status'];
  /** What a queued execution waits for before its attempt is scheduled (a quota slot); null otherwise. */
  waitingFor: 'workspace_quota' | null;
  /** The schedule fire that started it; null for a start over HTTP. */
  scheduledBy: { schedule: string; fireTime: string } | null;
  cancelRequested: boolean;
  attemptCount: number;
  startedAt: string;
  updatedAt: string;
  endedAt: string | null;
  position: Position;
  /** The list's order key; the cursor encodes it. */
  createdPosition: Position;
}

/** A task that is scheduled or claimed, with the execution and workspace it belongs to. */
export type OpenTask = TaskRecord & { executionId: string; workspaceId: string };

export interface ExecutionListFilter {
  workspaceId: string;
  statuses: readonly string[] | null;
  workflowName: string | null;
  /** Only executions created before this one (the previous page's last), newest first. */
  before: Position | null;
  limit: number;
}

interface SummaryRow {
  execution_id: string;
  workspace_id: string;
  workflow_name: string;
  workflow_revision: number;
  status: StartedExecution['status'];
  waiting_for: 'workspace_quota' | null;
  scheduled_by: { schedule: string; fireTime: string } | null;
  cancel_requested: boolean;
  attempt_count: number;
  started_at: Date | string;
  updated_at: Date | string;
  ended_at: Date | string | null;
  position: string;
  created_position: string;
}

/** Queries over the `executions` read model (through its view: always the live version). */
export class ExecutionsReadModel {
  constructor(private readonly sql: SqlQueryable) {}

  async get(executionId: string): Promise<ExecutionDocument | null> {
    const { rows } = await this.sql.query<{
      state: StartedExecution;
      position: string;
      revision: number;
      created_position: string;
      trace_id: string | null;
    }>('select state, position, revision, created_position, trace_id from read_models.executions where execution_id = $1', [executionId]);
    const row = rows[0];
    return row === undefined
      ? null
      : {
          state: row.state,
          position: row.position,
          revision: Number(row.revision),
          createdPosition: row.created_position,
          traceId: row.trace_id,
        };
  }

  /**
   * The tasks still to be handed out or completed (scheduled or claimed), of every workspace, and
   * the checkpoint they reflect (same statement, same snapshot): a reader that follows the log
   * after that checkpoint misses none and sees every later change.
   */
  async openTasks(): Promise<{ tasks: OpenTask[]; checkpoint: Position | null }> {
    const { rows } = await this.sql.query<{
      execution_id: string;
      workspace_id: string;
      tasks: Record<string, TaskRecord> | null;
      checkpoint: string | null;
    }>(
      `select e.execution_id, e.workspace_id, e.state->'tasks' as tasks,
              (select c.position from projector.projections p
               join projector.checkpoints c on c.name = p.name and c.version = p.live_version
               where p.name = 'executions') as checkpoint
       from (select 1) as anchor
       left join read_models.executions e on e.has_open_tasks`,
    );
    const tasks: OpenTask[] = [];
    for (const row of rows) {
      if (row.execution_id === null) continue;
      for (const task of Object.values(row.tasks ?? {})) {
        if (task.status === 'scheduled' || task.status === 'claimed')
          tasks.push({ ...task, executionId: row.execution_id, workspaceId: row.workspace_id });
      }
    }
    return { tasks, checkpoint: rows[0]?.checkpoint ?? null };
  }

  /** One page, newest first, and the checkpoint it reflects (same statement, same snapshot). */
  async list(filter: ExecutionListFilter): Promise<{ executions: ExecutionSummary[]; checkpoint: Position | null }> {
    const { rows } = await this.sql.query<SummaryRow & { checkpoint: string | null }>(
      `select e.execution_id, e.workspace_id, e.workflow_name, e.workflow_revision, e.status,
              -- Only a queued execution can wait; the document is opened for those rows alone.
              case when e.status = 'queued' then e.state->'awaitingSlot'->>'waitingFor' end as waiting_for,
              e.state->'scheduledBy' as scheduled_by, e.cancel_requested,
              e.attempt_count, e.started_at, e.updated_at, e.ended_at, e.position, e.created_position,
              (select c.position from projector.projections p
               join projector.checkpoints c on c.name = p.name and c.version = p.live_version
               where p.name = 'executions') as checkpoint
       from (select 1) as anchor
       left join lateral (
         select * from read_models.executions x
         where x.workspace_id = $1
           and ($2::text[] is null or x.status = any($2::text[]))
           and ($3::text is null or x.workflow_name = $3)
           and ($4::text is null or x.created_position < $4::text collate "C")
         order by x.created_position desc
         limit $5
       ) as e on true
       order by e.created_position desc`,
      [filter.workspaceId, filter.statuses, filter.workflowName, filter.before, filter.limit],
    );
    const checkpoint = rows[0]?.checkpoint ?? null;
    return { executions: rows.filter((row) => row.execution_id !== null).map(toSummary), checkpoint };
  }

  /**
   * Retention's candidates: executions that ended before `cutoff`, by id after `after`, at most
   * `limit`. The store has the last word (the sweep reads each stream before deleting it).
   */
  async endedBefore(cutoff: Date, after: string | null, limit: number): Promise<{ executionId: string; position: Position }[]> {
    const { rows } = await this.sql.query<{ execution_id: string; position: string }>(
      `select execution_id, position from read_models.executions
       where ended_at < $1::timestamptz and ($2::text is null or execution_id > $2::text collate "C")
       order by execution_id collate "C" limit $3`,
      [cutoff.toISOString(), after, limit],
    );
    return rows.map((row) => ({ executionId: row.execution_id, position: row.position }));
  }
}

function toSummary(row: SummaryRow): ExecutionSummary {
  return {
    executionId: row.execution_id,
    workspaceId: row.workspace_id,
    workflowName: row.workflow_name,
    workflowRevision: Number(row.workflow_revision),
    status: row.status,
    waitingFor: row.waiting_for ?? null,
    scheduledBy: row.scheduled_by ?? null,
    cancelRequested: row.cancel_requested,
    attemptCount: Number(row.attempt_count),
    startedAt: iso(row.started_at),
    updatedAt: iso(row.updated_at),
    endedAt: row.ended_at === null ? null : iso(row.ended_at),
    position: row.position,
    createdPosition: row.created_position,
  };
}

function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
