import { randomUUID } from 'node:crypto';
import { WrongExpectedRevisionError } from '../../core/errors.js';
import type {
  AppendResult,
  EventStore,
  EventToAppend,
  ExpectedRevision,
  Position,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeOptions,
} from '../../core/event-store.port.js';
import { sqlErrorInfo, type SqlClient } from '../../postgres/sql-client.port.js';
import {
  APPEND_SQL,
  PROBE_SQL,
  READ_PAGE_SQL,
  READ_STREAM_SQL,
  STREAM_REVISION_SQL,
  headPosition,
  revisionName,
  toRecordedEvent,
  type AppendRow,
  type EventRow,
  type HeadRow,
} from './event-store.queries.js';
import { EVENTS_CHANNEL, migrateEventStore } from './event-store.schema.js';
import {
  expectedRevisionParams,
  validateEvents,
  validateInteger,
  validateStreamId,
  validateStreamPrefixes,
} from './event-store.validation.js';
import { LogWatcher, type LogProbe } from './log-watcher.js';
import { WakeNotifier } from './wake-notifier.js';
import { LOG_START, comparePositions, decodePosition, encodePosition } from './position.codec.js';

export interface PostgresEventStoreOptions {
  /** Fallback poll of waiting subscriptions, for a lost notification. Default 500 ms. */
  pollIntervalMs?: number;
  /** Default upper bound of a subscription batch. Default 500. */
  defaultBatchSize?: number;
  /** After a wake-up, subscriptions wait this long for more appends before reading. Default 4 ms. */
  coalesceMs?: number;
  /** Close the SqlClient with the store, when the store is its only user. Default false. */
  closeClient?: boolean;
  /** A wake-up NOTIFY failed: subscribers in other processes wait for their poll. */
  onNotifyError?: (error: unknown) => void;
}

interface Page {
  events: RecordedEvent[];
  /** Readable head in the page's snapshot: nothing matching lies between the page and it. */
  head: Position | null;
}

/**
 * EventStore over Postgres (node-postgres or PGlite, same SQL). Appends are one autocommit
 * call of `event_store.append`; global reads are gated by the snapshot's xmin so that a
 * transaction committing late can never be skipped (see event-store.schema.ts).
 */
export class PostgresEventStore implements EventStore {
  /** Tells this store's own wake-ups from other processes' on the shared channel. */
  private readonly instanceId = randomUUID();
  private readonly watcher: LogWatcher;
  private readonly notifier: WakeNotifier;
  private readonly defaultBatchSize: number;
  private readonly coalesceMs: number;

  constructor(
    private readonly client: SqlClient,
    private readonly options: PostgresEventStoreOptions = {},
  ) {
    this.defaultBatchSize = options.defaultBatchSize ?? 500;
    this.coalesceMs = options.coalesceMs ?? 4;
    this.watcher = new LogWatcher({
      probe: () => this.probe(),
      listen: (onWake) =>
        client.listen(EVENTS_CHANNEL, (payload) => {
          if (payload !== this.instanceId) onWake();
        }),
      pollIntervalMs: options.pollIntervalMs ?? 500,
    });
    // NOTIFY after commit, not inside the append: Postgres serializes the commits of notifying
    // transactions (one lock held through the WAL flush), which cut append throughput to a
    // third at 32 writers in bench/append.bench.ts.
    this.notifier = new WakeNotifier(
      () => client.notify(EVENTS_CHANNEL, this.instanceId),
      options.onNotifyError ?? (() => undefined),
    );
  }

  /** Migrates the schema to the latest version, then opens the store. */
  static async open(client: SqlClient, options?: PostgresEventStoreOptions): Promise<PostgresEventStore> {
    await migrateEventStore(client);
    return new PostgresEventStore(client, options);
  }

  async appendToStream(
    streamId: string,
    events: EventToAppend[],
    options: { expectedRevision: ExpectedRevision },
  ): Promise<AppendResult> {
    validateStreamId(streamId);
    validateEvents(events);
    const [kind, revision] = expectedRevisionParams(options.expectedRevision);
    const payload = JSON.stringify(events.map(({ id, type, data, metadata }) => ({ id, type, data, metadata })));
    let row: AppendRow;
    try {
      [row] = (await this.client.query<AppendRow>(APPEND_SQL, [streamId, kind, revision, payload])).rows as [AppendRow];
    } catch (error) {
      const { code, constraint } = sqlErrorInfo(error);
      if (code === '23505' && constraint === 'events_event_id_key') {
        // The fact exists already (a retried deterministic id): a conflict, like a lost race.
        throw new WrongExpectedRevisionError(streamId, String(options.expectedRevision), await this.currentRevision(streamId));
      }
      throw error;
    }
    if (row.conflict) {
      throw new WrongExpectedRevisionError(streamId, String(options.expectedRevision), revisionName(Number(row.actual_revision)));
    }
    this.watcher.wake();
    this.notifier.request();
    return {
      nextRevision: Number(row.next_revision),
      position: encodePosition({ transactionId: BigInt(row.position_xid!), seq: BigInt(row.position_seq!) }),
    };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    validateStreamId(streamId);
    const fromRevision = validateInteger('fromRevision', options.fromRevision ?? 0, 0);
    const maxCount = options.maxCount === undefined ? null : validateInteger('maxCount', options.maxCount, 1);
    const { rows } = await this.client.query<EventRow>(READ_STREAM_SQL, [streamId, fromRevision, maxCount]);
    return rows.map(toRecordedEvent);
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const maxCount = validateInteger('maxCount', options.maxCount, 1);
    const prefixes = validateStreamPrefixes(options.streamPrefixes);
    return (await this.readPage(options.after ?? null, maxCount, prefixes)).events;
  }

  async *subscribeToAll(options: SubscribeOptions): AsyncIterable<RecordedEvent[]> {
    const batchSize = validateInteger('batchSize', options.batchSize ?? this.defaultBatchSize, 1);
    const prefixes = validateStreamPrefixes(options.streamPrefixes);
    let cursor = options.after ?? null;
    if (cursor !== null) decodePosition(cursor);
    const { signal } = options;
    if (signal.aborted) return;
    await this.watcher.acquire();
    try {
      while (!signal.aborted) {
        const page = await this.readPage(cursor, batchSize, prefixes);
        if (signal.aborted) return;
        if (page.events.length > 0) {
          cursor = page.events[page.events.length - 1]!.position;
          yield page.events;
          if (page.events.length === batchSize) continue;
        }
        // A short page saw everything readable: skip to the head, so that appends to streams
        // outside the prefixes do not make this subscription re-read the same range.
        if (comparePositions(page.head, cursor) > 0) cursor = page.head;
        await this.watcher.waitBeyond(cursor, signal);
        // Let a burst of appends land before reading: one page and one downstream transaction
        // for many events instead of one each, at the cost of a few milliseconds of latency.
        if (this.coalesceMs > 0 && !signal.aborted) await new Promise((resolve) => setTimeout(resolve, this.coalesceMs));
      }
    } finally {
      this.watcher.release();
    }
  }

  async headPosition(): Promise<Position | null> {
    return (await this.probe()).head;
  }

  async close(): Promise<void> {
    this.watcher.close();
    await this.notifier.flush();
    if (this.options.closeClient === true) await this.client.close();
  }

  private async readPage(after: Position | null, maxCount: number, prefixes: string[] | null): Promise<Page> {
    const from = after === null ? LOG_START : decodePosition(after);
    const { rows } = await this.client.query<EventRow & HeadRow>(READ_PAGE_SQL, [
      from.transactionId.toString(),
      from.seq.toString(),
      prefixes,
      maxCount,
    ]);
    const events = rows.filter((row) => row.event_id !== null).map(toRecordedEvent);
    return { events, head: headPosition(rows[0]) };
  }

  private async probe(): Promise<LogProbe> {
    const { rows } = await this.client.query<HeadRow & { held_back: boolean }>(PROBE_SQL);
    return { head: headPosition(rows[0]), heldBack: rows[0]?.held_back === true };
  }

  private async currentRevision(streamId: string): Promise<string> {
    const { rows } = await this.client.query<{ revision: string | number }>(STREAM_REVISION_SQL, [streamId]);
    return revisionName(rows[0] === undefined ? null : Number(rows[0].revision));
  }
}
