import { ensureTables } from '../../postgres/checkpoint-store.js';
import { reusable, type SqlClient, type SqlTransaction } from '../../postgres/sql-client.port.js';
import type { TimerPlan } from '../application/timer-plan.js';

/** A timer as a timer process claimed it to fire. */
export interface DueTimer {
  timerId: string;
  executionId: string;
  dueMs: number;
  failures: number;
}

interface Row {
  timer_id: string;
  execution_id: string;
  due_ms: string | number;
  failures: number;
}

const toTimer = (row: Row): DueTimer => ({
  timerId: row.timer_id,
  executionId: row.execution_id,
  dueMs: Number(row.due_ms),
  failures: row.failures,
});

/**
 * `timers_due` in the read-model Postgres: every live timer of every execution, derived from the
 * log (a timer process's checkpointed subscription keeps it). Times are epoch milliseconds. A
 * timer process claims a batch of due rows for a while (`claimed_until_ms`, skipping rows another
 * process holds), so two processes share the work instead of repeating it; the decider still has
 * the last word, so a row claimed twice (a claim that ran out) never fires twice.
 */
export class TimerTable {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<TimerTable> {
    await ensureTables(sql, [
      `create table if not exists timers_due (
        timer_id text primary key,
        execution_id text not null,
        due_ms bigint not null,
        claimed_until_ms bigint not null default 0,
        failures integer not null default 0
      )`,
      `create index if not exists timers_due_due_idx on timers_due (due_ms)`,
      // Half of each page left free: a claim rewrites a row in its own page (a HOT update, no
      // new index entries), so claiming a batch of 1,000 due rows costs about half as much.
      // Set once, on tables made before it too.
      `do $$ begin
        if not exists (select 1 from pg_class where oid = 'timers_due'::regclass and reloptions @> array['fillfactor=50']) then
          alter table timers_due set (fillfactor = 50);
        end if;
      end $$`,
    ]);
    return new TimerTable(sql);
  }

  /**
   * Two statements whatever the batch size, queued in the transaction that moves the checkpoint:
   * they leave with its COMMIT.
   */
  apply(plan: TimerPlan, tx: SqlTransaction): void {
    if (plan.removals.length > 0) {
      tx.queue(reusable('delete from timers_due where timer_id in (select jsonb_array_elements_text($1::jsonb))'), [
        JSON.stringify(plan.removals),
      ]);
    }
    if (plan.upserts.length > 0) {
      tx.queue(
        reusable(`insert into timers_due (timer_id, execution_id, due_ms)
         select r->>'timerId', r->>'executionId', (r->>'dueMs')::bigint from jsonb_array_elements($1::jsonb) r
         on conflict (timer_id) do nothing`),
        [JSON.stringify(plan.upserts)],
      );
    }
  }

  /** Claims up to `limit` timers due at `nowMs` that no process holds, for `holdMs`. */
  async claimDue(nowMs: number, limit: number, holdMs: number): Promise<DueTimer[]> {
    const { rows } = await this.sql.query<Row>(
      `update timers_due t set claimed_until_ms = $2
       where t.timer_id in (
         select timer_id from timers_due where due_ms <= $1 and claimed_until_ms <= $1
         order by due_ms limit $3 for update skip locked)
       returning t.timer_id, t.execution_id, t.due_ms, t.failures`,
      [nowMs, nowMs + holdMs, limit],
    );
    return rows.map(toTimer).sort((a, b) => a.dueMs - b.dueMs);
  }

  /**
   * Up to `limit` timers due after `nowMs` and by `untilMs` that no process holds, soonest first
   * (the timer role reads their executions ahead). Nothing is claimed.
   */
  async coming(nowMs: number, untilMs: number, limit: number): Promise<DueTimer[]> {
    const { rows } = await this.sql.query<Row>(
      `select timer_id, execution_id, due_ms, failures from timers_due
       where due_ms > $1 and due_ms <= $2 and claimed_until_ms <= $1
       order by due_ms limit $3`,
      [nowMs, untilMs, limit],
    );
    return rows.map(toTimer);
  }

  /** When the next timer nobody holds is due (epoch ms), or null when none is left. */
  async nextDueMs(): Promise<number | null> {
    const { rows } = await this.sql.query<{ next: string | number | null }>(
      'select min(greatest(due_ms, claimed_until_ms)) as next from timers_due',
    );
    const next = rows[0]?.next;
    return next === null || next === undefined ? null : Number(next);
  }

  /** Every live timer of one execution (operations and tests). */
  async of(executionId: string): Promise<DueTimer[]> {
    const { rows } = await this.sql.query<Row>(
      'select timer_id, execution_id, due_ms, failures from timers_due where execution_id = $1 order by timer_id',
      [executionId],
    );
    return rows.map(toTimer);
  }

  /** Fired, or nothing left to fire: gone, in one statement. */
  async removeAll(timers: readonly DueTimer[]): Promise<void> {
    if (timers.length === 0) return;
    await this.sql.query('delete from timers_due where timer_id in (select jsonb_array_elements_text($1::jsonb))', [
      JSON.stringify(timers.map((t) => t.timerId)),
    ]);
  }

  /** Not due after all (the due time the decider named): wait until then. */
  async defer(timer: DueTimer, untilMs: number): Promise<void> {
    await this.sql.query('update timers_due set due_ms = greatest(due_ms, $2), claimed_until_ms = 0 where timer_id = $1', [
      timer.timerId,
      untilMs,
    ]);
  }

  /** Firing failed: try again later, later each time. */
  async backOff(timer: DueTimer, untilMs: number): Promise<void> {
    await this.sql.query('update timers_due set claimed_until_ms = $2, failures = failures + 1 where timer_id = $1', [
      timer.timerId,
      untilMs,
    ]);
  }
}
