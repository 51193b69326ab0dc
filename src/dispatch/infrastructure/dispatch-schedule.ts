import { ensureTables } from '../../postgres/checkpoint-store.js';
import { type SqlClient, type SqlQueryable, type SqlTransaction, write } from '../../postgres/sql-client.port.js';
import { type DispatchMessage, dispatchMessageSchema } from '../dispatch-message.js';

/**
 * Dispatches held back until their `notBefore` (retry backoff), durably, in the read-model
 * Postgres. One row per attempt: adding the same dispatch again is a no-op.
 */
export class DispatchSchedule {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<DispatchSchedule> {
    await ensureTables(sql, [
      `create table if not exists dispatch_schedule (
        message_id text primary key,
        execution_id text not null,
        not_before timestamptz not null,
        message text not null
      )`,
      `create index if not exists dispatch_schedule_due_idx on dispatch_schedule (not_before)`,
    ]);
    return new DispatchSchedule(sql);
  }

  /** Inserts in one statement; `q` is the transaction that also moves the checkpoint (queued there, see `write`). */
  async add(messages: readonly DispatchMessage[], q: SqlQueryable | SqlTransaction = this.sql): Promise<void> {
    if (messages.length === 0) return;
    await write(
      q,
      `insert into dispatch_schedule (message_id, execution_id, not_before, message)
       select m->>'messageId', m->>'executionId', (m->>'notBefore')::timestamptz, m::text
       from jsonb_array_elements($1::jsonb) as m
       on conflict (message_id) do nothing`,
      [JSON.stringify(messages)],
    );
  }

  /** Messages due at `now`, earliest first. */
  async due(now: Date, limit: number): Promise<DispatchMessage[]> {
    const { rows } = await this.sql.query<{ message: string }>(
      'select message from dispatch_schedule where not_before <= $1::timestamptz order by not_before limit $2',
      [now.toISOString(), limit],
    );
    return rows.map((row) => dispatchMessageSchema.parse(JSON.parse(row.message)));
  }

  /** When the earliest held-back dispatch falls due, or null when none is held back. */
  async nextDue(): Promise<Date | null> {
    const { rows } = await this.sql.query<{ next: string | Date | null }>('select min(not_before) as next from dispatch_schedule');
    const next = rows[0]?.next ?? null;
    return next === null ? null : new Date(next);
  }

  async remove(messageIds: readonly string[]): Promise<void> {
    if (messageIds.length === 0) return;
    await this.sql.query('delete from dispatch_schedule where message_id in (select jsonb_array_elements_text($1::jsonb))', [
      JSON.stringify(messageIds),
    ]);
  }

  async count(): Promise<number> {
    const { rows } = await this.sql.query<{ n: string | number }>('select count(*) as n from dispatch_schedule');
    return Number(rows[0]?.n ?? 0);
  }
}
