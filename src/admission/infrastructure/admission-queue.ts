import { ensureTables } from '../../postgres/checkpoint-store.js';
import { reusable, type SqlClient, type SqlQueryable } from '../../postgres/sql-client.port.js';

/**
 * Where a queued run stands: `waiting` for a slot; `admitted` (its attempt is scheduled, its
 * slot held); `ended` (the run ended, its slot, if any, must be given back); `released` (done:
 * kept for a while so that a replay of the log does not queue the run again).
 */
export type QueuedRunStatus = 'waiting' | 'admitted' | 'ended' | 'released';

/** One run that waited for a slot, by the attempt its admission schedules. */
export interface QueuedRun {
  attemptId: string;
  executionId: string;
  workspaceId: string;
  /** Position of its ExecutionAwaitingSlot: the queue's order (a start's or a redrive's own append). */
  position: string;
  status: QueuedRunStatus;
}

/** A run that began waiting, as the log tells it. */
export type Wait = Omit<QueuedRun, 'status'>;

/** An execution ended at `position`: every run of it that began waiting before then is over. */
export interface RunEnd {
  executionId: string;
  position: string;
}

interface Row {
  attempt_id: string;
  execution_id: string;
  workspace_id: string;
  position: string;
  status: QueuedRunStatus;
}

/**
 * `admission_queue` in the read-model Postgres: the runs that waited for a quota slot, derived
 * from the log by the admission's subscription (and so rebuilt by a replay, never the truth
 * about slots: that is the quota stream). Every change is idempotent and monotonic: a wait is
 * inserted once, an end only moves a row that began before it, and only the admission moves a
 * row on from `ended`.
 */
export class AdmissionQueue {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<AdmissionQueue> {
    await ensureTables(sql, [
      `create table if not exists admission_queue (
        attempt_id text primary key,
        execution_id text not null,
        workspace_id text not null,
        position text collate "C" not null,
        status text not null check (status in ('waiting', 'admitted', 'ended', 'released')),
        updated_at timestamptz not null default now()
      )`,
      `create index if not exists admission_queue_workspace_idx on admission_queue (workspace_id, status, position)`,
      `create index if not exists admission_queue_execution_idx on admission_queue (execution_id)`,
      `create index if not exists admission_queue_work_idx on admission_queue (workspace_id) where status in ('waiting', 'ended')`,
    ]);
    return new AdmissionQueue(sql);
  }

  /** Queues runs that began waiting; one already known (waiting, or past it) stays as it is. */
  async addWaits(waits: readonly Wait[], q: SqlQueryable = this.sql): Promise<void> {
    if (waits.length === 0) return;
    await q.query(
      reusable(`insert into admission_queue (attempt_id, execution_id, workspace_id, position, status)
       select r->>'attemptId', r->>'executionId', r->>'workspaceId', r->>'position', 'waiting' from jsonb_array_elements($1::jsonb) r
       on conflict (attempt_id) do nothing`),
      [JSON.stringify(waits)],
    );
  }

  /**
   * Marks the runs these ends finish: those of the same execution that began waiting before the
   * end (a later run, from a redrive, is not touched). Returns the workspaces that have a slot to
   * give back now.
   */
  async markEnded(ends: readonly RunEnd[], q: SqlQueryable = this.sql): Promise<string[]> {
    if (ends.length === 0) return [];
    const { rows } = await q.query<{ workspace_id: string }>(
      reusable(`update admission_queue q set status = 'ended', updated_at = now()
       from jsonb_array_elements($1::jsonb) r
       where q.execution_id = r->>'executionId' and q.position < (r->>'position') collate "C" and q.status in ('waiting', 'admitted')
       returning q.workspace_id`),
      [JSON.stringify(ends)],
    );
    return [...new Set(rows.map((row) => row.workspace_id))];
  }

  /**
   * A workspace's runs still to handle, in queue order: every admitted and ended one, and the
   * first `waitingLimit` that wait (a long queue is read from its head, a page at a time).
   */
  async open(workspaceId: string, waitingLimit: number): Promise<QueuedRun[]> {
    const { rows } = await this.sql.query<Row>(
      reusable(`select * from (
         select attempt_id, execution_id, workspace_id, position, status from admission_queue
         where workspace_id = $1 and status in ('admitted', 'ended')
         union all
         (select attempt_id, execution_id, workspace_id, position, status from admission_queue
          where workspace_id = $1 and status = 'waiting' order by position limit $2)
       ) as runs order by position`),
      [workspaceId, waitingLimit],
    );
    return rows.map(toRun);
  }

  /** The runs of these attempts, whatever their status. */
  async ofAttempts(attemptIds: readonly string[]): Promise<QueuedRun[]> {
    if (attemptIds.length === 0) return [];
    const { rows } = await this.sql.query<Row>(
      reusable(`select attempt_id, execution_id, workspace_id, position, status from admission_queue where attempt_id = any($1::text[])`),
      [attemptIds],
    );
    return rows.map(toRun);
  }

  /** Executions with a run that waits or is admitted: the only ones whose end concerns the queue. */
  async openExecutions(): Promise<string[]> {
    const { rows } = await this.sql.query<{ execution_id: string }>(
      `select distinct execution_id from admission_queue where status in ('waiting', 'admitted')`,
    );
    return rows.map((row) => row.execution_id);
  }

  /** Workspaces with runs waiting for a slot or slots to give back. */
  async workspacesWithWork(): Promise<string[]> {
    const { rows } = await this.sql.query<{ workspace_id: string }>(
      `select distinct workspace_id from admission_queue where status in ('waiting', 'ended')`,
    );
    return rows.map((row) => row.workspace_id);
  }

  /** Moves runs on, never back: `admitted` only from `waiting`, `released` from anything. */
  async setStatus(attemptIds: readonly string[], status: 'admitted' | 'released'): Promise<void> {
    if (attemptIds.length === 0) return;
    await this.sql.query(
      reusable(`update admission_queue set status = $2, updated_at = now()
       where attempt_id = any($1::text[]) and (status = 'waiting' or $2 = 'released')`),
      [attemptIds, status],
    );
  }

  /**
   * Forgets runs released more than `ageMs` ago (by the database's clock): a replay of the log
   * that reaches that far back would only queue such a run again for the admission to let go.
   */
  async purgeReleased(ageMs: number): Promise<number> {
    const { rows } = await this.sql.query<{ n: string | number }>(
      `with gone as (
         delete from admission_queue where status = 'released' and updated_at < now() - make_interval(secs => $1::double precision / 1000)
         returning 1)
       select count(*) as n from gone`,
      [ageMs],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Every row of an execution (operations and tests). */
  async of(executionId: string): Promise<QueuedRun[]> {
    const { rows } = await this.sql.query<Row>(
      'select attempt_id, execution_id, workspace_id, position, status from admission_queue where execution_id = $1 order by position',
      [executionId],
    );
    return rows.map(toRun);
  }
}

function toRun(row: Row): QueuedRun {
  return {
    attemptId: row.attempt_id,
    executionId: row.execution_id,
    workspaceId: row.workspace_id,
    position: row.position,
    status: row.status,
  };
}
