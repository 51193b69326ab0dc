import { ensureTables } from '../../postgres/checkpoint-store.js';
import { type SqlClient, type SqlQueryable, type SqlTransaction, write } from '../../postgres/sql-client.port.js';
import { type DispatchMessage, dispatchMessageSchema } from '../dispatch-message.js';

/**
 * Dispatches sent on a bus that does not survive a restart (the in-process bus of the embedded
 * default) and not yet claimed. After a crash they are sent again, so an acknowledged start
 * still runs; a durable bus (Kafka) keeps them itself and this table stays unused.
 */
export class UnclaimedDispatches {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<UnclaimedDispatches> {
    await ensureTables(sql, [
      `create table if not exists dispatch_unclaimed (
        attempt_id text primary key,
        message text not null
      )`,
    ]);
    return new UnclaimedDispatches(sql);
  }

  /** Queued when `q` is a transaction (see `write`). */
  async add(messages: readonly DispatchMessage[], q: SqlQueryable | SqlTransaction): Promise<void> {
    if (messages.length === 0) return;
    await write(
      q,
      `insert into dispatch_unclaimed (attempt_id, message)
       select m->>'attemptId', m::text from jsonb_array_elements($1::jsonb) as m
       on conflict (attempt_id) do nothing`,
      [JSON.stringify(messages)],
    );
  }

  /** The attempts left the queue (claimed, cancelled, timed out): nothing to send again. */
  async remove(attemptIds: readonly string[], q: SqlQueryable | SqlTransaction): Promise<void> {
    if (attemptIds.length === 0) return;
    await write(q, 'delete from dispatch_unclaimed where attempt_id in (select jsonb_array_elements_text($1::jsonb))', [
      JSON.stringify(attemptIds),
    ]);
  }

  async all(): Promise<DispatchMessage[]> {
    const { rows } = await this.sql.query<{ message: string }>('select message from dispatch_unclaimed');
    return rows.map((row) => dispatchMessageSchema.parse(JSON.parse(row.message)));
  }
}
