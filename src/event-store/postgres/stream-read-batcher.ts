import type { SqlQueryable } from '../../postgres/sql-client.port.js';
import { READ_STREAMS_SQL, READ_STREAM_SQL, type EventRow } from './event-store.queries.js';
import { GroupBatcher, type GroupBatcherOptions, type Pending } from './group-batcher.js';

/** One caller's read of one stream. */
export interface StreamRead {
  streamId: string;
  fromRevision: number;
  /** Null for every event from `fromRevision` on. */
  maxCount: number | null;
}

/**
 * Reads of streams made while another is out go together in one statement, each answered with
 * its own stream's rows. No timer: a read to an idle store leaves at once, alone. A batch is
 * sent after every one of its reads was asked for, so each still sees every append that
 * finished before it was made.
 */
export class StreamReadBatcher {
  private readonly batcher: GroupBatcher<StreamRead, EventRow[]>;

  constructor(
    private readonly sql: SqlQueryable,
    options: GroupBatcherOptions,
  ) {
    this.batcher = new GroupBatcher((batch) => this.send(batch), options);
  }

  read(request: StreamRead): Promise<EventRow[]> {
    return this.batcher.submit(request);
  }

  private async send(batch: Pending<StreamRead, EventRow[]>[]): Promise<void> {
    try {
      if (batch.length === 1) {
        const { request, resolve } = batch[0]!;
        const { rows } = await this.sql.query<EventRow>(READ_STREAM_SQL, [request.streamId, request.fromRevision, request.maxCount]);
        resolve(rows);
        return;
      }
      const { rows } = await this.sql.query<EventRow & { ord: string | number }>(READ_STREAMS_SQL, [
        batch.map((p) => p.request.streamId),
        batch.map((p) => p.request.fromRevision),
        batch.map((p) => p.request.maxCount),
      ]);
      const answers = batch.map((): EventRow[] => []);
      for (const { ord, ...row } of rows) answers[Number(ord) - 1]!.push(row);
      batch.forEach((pending, index) => pending.resolve(answers[index]!));
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    }
  }
}
