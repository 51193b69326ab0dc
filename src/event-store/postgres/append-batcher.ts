import { sqlErrorInfo, type SqlQueryable } from '../../postgres/sql-client.port.js';
import { APPEND_MANY_SQL, APPEND_SQL, type AppendRow } from './event-store.queries.js';
import { StatementBatcher, type Pending as PendingOf, type StatementBatcherOptions } from './statement-batcher.js';

/** One caller's append, as `event_store.append` takes it; `events` is its JSON array, already serialized. */
export interface AppendRequest {
  streamId: string;
  kind: string;
  revision: number | null;
  events: string;
}

type Pending = PendingOf<AppendRequest, AppendRow>;

/**
 * Group commit of appends: while `maxInFlight` batches are out, new appends queue, and the
 * next batch carries all of them in one statement (`event_store.append_many`), one commit and
 * one WAL flush. No timer: an append to an idle store leaves at once, alone, as the plain
 * `event_store.append` it always was. Each append keeps its own stream, expected revision and
 * answer; a conflict of one leaves the others appended.
 *
 * A batch fails as a whole only on an error raised inside it. A duplicate event id (a retried
 * deterministic fact) is the one such error an append can cause for itself: the batch then
 * rolled back, and its appends are sent again one by one, so the duplicate fails alone, as
 * the caller's own error. Any other error reaches every caller of the batch: nothing of it
 * was committed.
 */
export class AppendBatcher {
  private readonly batcher: StatementBatcher<AppendRequest, AppendRow>;

  constructor(
    private readonly sql: SqlQueryable,
    options: StatementBatcherOptions,
  ) {
    this.batcher = new StatementBatcher((batch) => this.send(batch), options);
  }

  /** Resolves with the append's row (a conflict is a row too); rejects with the database's error. */
  append(request: AppendRequest): Promise<AppendRow> {
    return this.batcher.add(request);
  }

  /** Settles every caller of the batch; never throws. */
  private async send(batch: Pending[]): Promise<void> {
    if (batch.length === 1) return this.sendAlone(batch[0]);
    let rows: (AppendRow & { ord: number })[];
    try {
      ({ rows } = await this.sql.query<AppendRow & { ord: number }>(APPEND_MANY_SQL, [batchJson(batch)]));
    } catch (error) {
      if (isDuplicateEventId(error)) {
        // In call order: appends to one stream keep the order their callers made them in.
        for (const pending of batch) await this.sendAlone(pending);
        return;
      }
      for (const pending of batch) pending.reject(error);
      return;
    }
    for (const row of rows) {
      const { ord, ...append } = row;
      batch[Number(ord) - 1].resolve(append);
    }
    // The function answers every append; should a row be missing, its caller must not hang.
    if (rows.length !== batch.length) {
      const answered = new Set(rows.map((row) => Number(row.ord) - 1));
      batch.forEach(
        (pending, index) => answered.has(index) || pending.reject(new Error('the batch append returned no row for this append')),
      );
    }
  }

  private async sendAlone({ request, resolve, reject }: Pending): Promise<void> {
    try {
      const { rows } = await this.sql.query<AppendRow>(APPEND_SQL, [request.streamId, request.kind, request.revision, request.events]);
      resolve(rows[0]);
    } catch (error) {
      reject(error);
    }
  }
}

/** The batch as `append_many` reads it; each caller's events are spliced in as already-serialized JSON. */
function batchJson(batch: Pending[]): string {
  const items = batch.map(
    ({ request: { streamId, kind, revision, events } }) =>
      `{"stream":${JSON.stringify(streamId)},"kind":${JSON.stringify(kind)},"revision":${revision === null ? 'null' : revision},"events":${events}}`,
  );
  return `[${items.join(',')}]`;
}

export function isDuplicateEventId(error: unknown): boolean {
  const { code, constraint } = sqlErrorInfo(error);
  return code === '23505' && constraint === 'events_event_id_key';
}
