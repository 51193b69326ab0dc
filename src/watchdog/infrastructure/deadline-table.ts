import { ensureTables } from '../../postgres/checkpoint-store.js';
import { reusable, type SqlClient, type SqlTransaction } from '../../postgres/sql-client.port.js';
import type { Deadline, DeadlineKind, DeadlinePlan } from '../application/deadline-plan.js';

/** A claimed task's deadline as the timer picked it. */
export interface DueTaskDeadline {
  taskId: string;
  executionId: string;
  dueMs: number;
  failures: number;
}

/** A deadline as the timer picked it, with how often firing it failed so far. */
export interface DueDeadline extends Deadline {
  failures: number;
}

interface Row {
  execution_id: string;
  kind: DeadlineKind;
  attempt_id: string | null;
  due_ms: string | number;
  failures: number;
}

/**
 * `watchdog_deadlines` in the read-model Postgres. Times are epoch milliseconds, so the timer's
 * conditional updates compare exactly what they read. Updates after a firing are conditional on
 * the deadline still being the one fired (same attempt; for the execution's, same due time):
 * the subscription may have replaced it meanwhile, and its version wins.
 */
export class DeadlineTable {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<DeadlineTable> {
    await ensureTables(sql, [
      `create table if not exists watchdog_deadlines (
        execution_id text not null,
        kind text not null check (kind in ('attempt', 'execution')),
        attempt_id text,
        due_ms bigint not null,
        failures integer not null default 0,
        primary key (execution_id, kind)
      )`,
      `create index if not exists watchdog_deadlines_due_idx on watchdog_deadlines (due_ms)`,
      // Claimed tasks: the lease, or the timeout when it comes first (due_ms is the earlier one).
      `create table if not exists watchdog_task_deadlines (
        task_id text primary key,
        execution_id text not null,
        lease_ms bigint not null,
        timeout_ms bigint,
        due_ms bigint not null,
        failures integer not null default 0
      )`,
      `create index if not exists watchdog_task_deadlines_due_idx on watchdog_task_deadlines (due_ms)`,
    ]);
    return new DeadlineTable(sql);
  }

  /**
   * Two statements whatever the batch size, queued in `tx` (removals first), the transaction
   * that moves the checkpoint: they leave with its COMMIT, and a failure fails it.
   */
  apply(plan: DeadlinePlan, tx: SqlTransaction): void {
    if (plan.removals.length > 0) {
      tx.queue(
        reusable(`delete from watchdog_deadlines d using jsonb_array_elements($1::jsonb) r
         where d.execution_id = r->>'executionId' and d.kind = r->>'kind'
           and (r->>'attemptId' is null or d.attempt_id = r->>'attemptId')`),
        [JSON.stringify(plan.removals)],
      );
    }
    if (plan.upserts.length > 0) {
      tx.queue(
        reusable(`insert into watchdog_deadlines (execution_id, kind, attempt_id, due_ms, failures)
         select r->>'executionId', r->>'kind', r->>'attemptId', (r->>'dueMs')::bigint, 0 from jsonb_array_elements($1::jsonb) r
         on conflict (execution_id, kind) do update
           set attempt_id = excluded.attempt_id, due_ms = excluded.due_ms, failures = 0`),
        [JSON.stringify(plan.upserts)],
      );
    }
  }

  /** The tasks' share of a plan, queued in the same transaction as the rest. */
  applyTasks(plan: DeadlinePlan, tx: SqlTransaction): void {
    if (plan.taskRemovals.length > 0) {
      tx.queue(reusable('delete from watchdog_task_deadlines where task_id in (select jsonb_array_elements_text($1::jsonb))'), [
        JSON.stringify(plan.taskRemovals),
      ]);
    }
    if (plan.taskUpserts.length > 0) {
      tx.queue(
        reusable(`insert into watchdog_task_deadlines as t (task_id, execution_id, lease_ms, timeout_ms, due_ms, failures)
         select r->>'taskId', r->>'executionId', (r->>'leaseMs')::bigint, (r->>'timeoutMs')::bigint,
           least((r->>'leaseMs')::bigint, coalesce((r->>'timeoutMs')::bigint, (r->>'leaseMs')::bigint)), 0
         from jsonb_array_elements($1::jsonb) r
         on conflict (task_id) do update
           set lease_ms = excluded.lease_ms, timeout_ms = coalesce(excluded.timeout_ms, t.timeout_ms),
             due_ms = least(excluded.lease_ms, coalesce(excluded.timeout_ms, t.timeout_ms, excluded.lease_ms)), failures = 0`),
        [JSON.stringify(plan.taskUpserts)],
      );
    }
  }

  async dueTasks(nowMs: number, limit: number): Promise<DueTaskDeadline[]> {
    const { rows } = await this.sql.query<{ task_id: string; execution_id: string; due_ms: string | number; failures: number }>(
      'select task_id, execution_id, due_ms, failures from watchdog_task_deadlines where due_ms <= $1 order by due_ms limit $2',
      [nowMs, limit],
    );
    return rows.map((row) => ({ taskId: row.task_id, executionId: row.execution_id, dueMs: Number(row.due_ms), failures: row.failures }));
  }

  /** Every task deadline of one execution (operations and tests). */
  async tasksOf(executionId: string): Promise<DueTaskDeadline[]> {
    const { rows } = await this.sql.query<{ task_id: string; execution_id: string; due_ms: string | number; failures: number }>(
      'select task_id, execution_id, due_ms, failures from watchdog_task_deadlines where execution_id = $1 order by task_id',
      [executionId],
    );
    return rows.map((row) => ({ taskId: row.task_id, executionId: row.execution_id, dueMs: Number(row.due_ms), failures: row.failures }));
  }

  /** Fired, or nothing left to fire: gone unless the subscription moved it meanwhile. */
  async removeTask(fired: DueTaskDeadline): Promise<void> {
    await this.sql.query('delete from watchdog_task_deadlines where task_id = $1 and due_ms = $2', [fired.taskId, fired.dueMs]);
  }

  async deferTask(fired: DueTaskDeadline, untilMs: number): Promise<void> {
    await this.sql.query(
      'update watchdog_task_deadlines set due_ms = greatest(due_ms, $3), failures = 0 where task_id = $1 and due_ms = $2',
      [fired.taskId, fired.dueMs, untilMs],
    );
  }

  async backOffTask(fired: DueTaskDeadline, untilMs: number): Promise<void> {
    await this.sql.query('update watchdog_task_deadlines set due_ms = $3, failures = failures + 1 where task_id = $1 and due_ms = $2', [
      fired.taskId,
      fired.dueMs,
      untilMs,
    ]);
  }

  async due(nowMs: number, limit: number): Promise<DueDeadline[]> {
    const { rows } = await this.sql.query<Row>(
      'select execution_id, kind, attempt_id, due_ms, failures from watchdog_deadlines where due_ms <= $1 order by due_ms limit $2',
      [nowMs, limit],
    );
    return rows.map(toDeadline);
  }

  /** Every deadline of one execution (operations and tests). */
  async of(executionId: string): Promise<DueDeadline[]> {
    const { rows } = await this.sql.query<Row>(
      'select execution_id, kind, attempt_id, due_ms, failures from watchdog_deadlines where execution_id = $1 order by kind',
      [executionId],
    );
    return rows.map(toDeadline);
  }

  async remove(fired: DueDeadline): Promise<void> {
    await this.sql.query(`delete from watchdog_deadlines where ${SAME_DEADLINE}`, identity(fired));
  }

  /** Not due after all (a heartbeat won, a redrive moved it): wait until the deadline the decider named. */
  async defer(fired: DueDeadline, untilMs: number): Promise<void> {
    await this.sql.query(`update watchdog_deadlines set due_ms = greatest(due_ms, $5), failures = 0 where ${SAME_DEADLINE}`, [
      ...identity(fired),
      untilMs,
    ]);
  }

  /** Firing failed: try again later, later each time. */
  async backOff(fired: DueDeadline, untilMs: number): Promise<void> {
    await this.sql.query(`update watchdog_deadlines set due_ms = $5, failures = failures + 1 where ${SAME_DEADLINE}`, [
      ...identity(fired),
      untilMs,
    ]);
  }
}

const SAME_DEADLINE = `execution_id = $1 and kind = $2
  and (case when kind = 'attempt' then attempt_id = $3 else due_ms = $4 end)`;

const identity = (d: DueDeadline): unknown[] => [d.executionId, d.kind, d.attemptId, d.dueMs];

function toDeadline(row: Row): DueDeadline {
  return { executionId: row.execution_id, kind: row.kind, attemptId: row.attempt_id, dueMs: Number(row.due_ms), failures: row.failures };
}
