import type { SqlQueryable } from '../../postgres/sql-client.port.js';
import { READ_STREAMS_SQL, READ_STREAM_SQL, type EventRow, type StreamEvents, type StreamEventsRow } from './event-store.queries.js';
import { StatementBatcher, type Pending, type StatementBatcherOptions } from './statement-batcher.js';

/** One stream read, as READ_STREAMS_SQL takes it. */
export interface StreamRead {
  streamId: string;
  fromRevision: number;
  maxCount: number | null;
}

/**
 * Stream reads share statements under load: while `maxInFlight` reads are out, new ones queue,
 * and the next statement reads every queued stream at once (READ_STREAMS_SQL), a round trip
 * for all of them instead of one each. A read to an idle store leaves at once, alone
 * (READ_STREAM_SQL, rows). A batch's answers are each stream's events as JSON text (null for
 * none); every caller decodes its own (`toStreamEvents`). A read is
 * never answered by a statement sent before it was requested, so it still sees every commit
 * that completed before its call.
 */
export class StreamReadBatcher {
  private readonly batcher: StatementBatcher<StreamRead, StreamEvents>;

  constructor(
    private readonly sql: SqlQueryable,
    options: StatementBatcherOptions,
  ) {
    this.batcher = new StatementBatcher((batch) => this.send(batch), options);
  }

  read(request: StreamRead): Promise<StreamEvents> {
    return this.batcher.add(request);
  }

  /** Settles every caller of the batch; never throws. */
  private async send(batch: Pending<StreamRead, StreamEvents>[]): Promise<void> {
    try {
      if (batch.length === 1) {
        const { streamId, fromRevision, maxCount } = batch[0].request;
        batch[0].resolve((await this.sql.query<EventRow>(READ_STREAM_SQL, [streamId, fromRevision, maxCount])).rows);
        return;
      }
      const { rows } = await this.sql.query<StreamEventsRow>(READ_STREAMS_SQL, [
        batch.map(({ request }) => request.streamId),
        batch.map(({ request }) => request.fromRevision),
        batch.map(({ request }) => request.maxCount),
      ]);
      const answers: StreamEvents[] = batch.map(() => null);
      for (const { ord, events } of rows) answers[Number(ord) - 1] = events;
      batch.forEach((pending, index) => pending.resolve(answers[index]));
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    }
  }
}
