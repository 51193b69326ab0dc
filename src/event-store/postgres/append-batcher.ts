import { sqlErrorInfo, type SqlClient, type SqlQueryable, type StatementCall } from '../../postgres/sql-client.port.js';
import { APPEND_MANY_SQL, APPEND_SQL, type AppendRow } from './event-store.queries.js';
import { StatementBatcher, type Pending as PendingOf, type StatementBatcherOptions } from './statement-batcher.js';

/** One caller's append, as `event_store.append` takes it; `events` is its JSON array, already serialized. */
export interface AppendRequest {
  streamId: string;
  kind: string;
  revision: number | null;
  events: string;
}

/** An append's answer, and whether a read of the log rode behind its batch (see `ReadBehind`). */
export interface Appended {
  row: AppendRow;
  readBehind: boolean;
}

/**
 * A read sent right behind an append batch, on its connection and in its write
 * (`SqlClient.queryThen`): it sees the batch committed, at no round trip of its own.
 */
export interface ReadBehind {
  call: StatementCall;
  /** Called once with the read's rows or error, after the batch's appends were answered. */
  settle(outcome: { rows: unknown[] } | { error: unknown }): void;
}

export interface AppendBatcherOptions extends StatementBatcherOptions {
  /** The read to send behind the next batch, or null for none; asked as the batch leaves. */
  readBehind?: () => ReadBehind | null;
}

type Pending = PendingOf<AppendRequest, Appended>;

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
 *
 * With `readBehind`, a read of the log leaves right behind each batch, in the same write and on
 * the same connection (`SqlClient.queryThen`): the store's shared tail learns of the batch
 * without a round trip of its own. The callers are answered as soon as the batch is.
 */
export class AppendBatcher {
  private readonly batcher: StatementBatcher<AppendRequest, Appended>;

  constructor(
    private readonly sql: SqlQueryable & Pick<SqlClient, 'queryThen'>,
    private readonly options: AppendBatcherOptions,
  ) {
    this.batcher = new StatementBatcher((batch) => this.send(batch), { maxInFlight: options.maxInFlight, maxBatch: options.maxBatch });
  }

  /** Resolves with the append's row (a conflict is a row too); rejects with the database's error. */
  append(request: AppendRequest): Promise<Appended> {
    return this.batcher.add(request);
  }

  /** Settles every caller of the batch; never throws. */
  private async send(batch: Pending[]): Promise<void> {
    const alone = batch.length === 1;
    const { first, behind } = this.run(alone ? APPEND_SQL : APPEND_MANY_SQL, alone ? appendParams(batch[0].request) : [batchJson(batch)]);
    const readBehind = behind !== null;
    let rows: (AppendRow & { ord?: number })[];
    try {
      ({ rows } = await first);
    } catch (error) {
      await behind;
      if (alone) return batch[0].reject(error);
      if (isDuplicateEventId(error)) {
        // In call order: appends to one stream keep the order their callers made them in.
        for (const pending of batch) await this.sendAlone(pending);
        return;
      }
      for (const pending of batch) pending.reject(error);
      return;
    }
    if (alone) batch[0].resolve({ row: rows[0], readBehind });
    else this.answer(batch, rows as (AppendRow & { ord: number })[], readBehind);
    // The batch's slot is held until the read behind it is in: one such read out at a time.
    await behind;
  }

  /**
   * The append statement, with the read behind it on the same connection when the client can
   * send them together; `behind` settles the read's handler and never rejects.
   */
  private run(sql: StatementCall['sql'], params: unknown[]): { first: Promise<{ rows: AppendRow[] }>; behind: Promise<void> | null } {
    const queryThen = this.sql.queryThen?.bind(this.sql);
    const read = queryThen === undefined ? null : (this.options.readBehind?.() ?? null);
    if (queryThen === undefined || read === null) return { first: this.sql.query<AppendRow>(sql, params), behind: null };
    const sent = queryThen<AppendRow, unknown>({ sql, params }, read.call);
    return {
      first: sent.first,
      behind: sent.then.then(
        (result) => read.settle(result),
        (error: unknown) => read.settle({ error }),
      ),
    };
  }

  private answer(batch: Pending[], rows: (AppendRow & { ord: number })[], readBehind: boolean): void {
    for (const row of rows) {
      const { ord, ...append } = row;
      batch[Number(ord) - 1].resolve({ row: append, readBehind });
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
      const { rows } = await this.sql.query<AppendRow>(APPEND_SQL, appendParams(request));
      resolve({ row: rows[0], readBehind: false });
    } catch (error) {
      reject(error);
    }
  }
}

function appendParams(request: AppendRequest): unknown[] {
  return [request.streamId, request.kind, request.revision, request.events];
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
