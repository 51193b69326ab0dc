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
import type { SqlClient } from '../../postgres/sql-client.port.js';
import { AppendBatcher, isDuplicateEventId, type ReadBehind } from './append-batcher.js';
import {
  DELETE_STREAM_SQL,
  PROBE_SQL,
  REACHED_SQL,
  READ_PAGE_SQL,
  READ_STREAMS_SQL,
  READ_TAIL_SQL,
  STREAM_REVISION_SQL,
  headPosition,
  revisionName,
  toLogEvents,
  toStreamEvents,
  type AppendRow,
  type HeadRow,
  type LogPageRow,
  type StreamEvents,
  type StreamEventsRow,
} from './event-store.queries.js';
import { EVENTS_CHANNEL, migrateEventStore } from './event-store.schema.js';
import {
  expectedRevisionParams,
  validateEvents,
  validateInteger,
  validateStreamId,
  validateStreamPrefixes,
} from './event-store.validation.js';
import { subscribeToLog, type LogPage } from './log-subscription.js';
import { LogTail, type RefreshPoint } from './log-tail.js';
import { LogWatcher, type LogProbe } from './log-watcher.js';
import { WakeNotifier } from '../../postgres/wake-notifier.js';
import { LOG_START, decodePosition, encodePosition, isPosition } from './position.codec.js';
import { ReadCoalescer } from './read-coalescer.js';
import { StreamReadBatcher } from './stream-read-batcher.js';

export interface PostgresEventStoreOptions {
  /** Fallback poll of waiting subscriptions, for a lost notification. Default 500 ms. */
  pollIntervalMs?: number;
  /** Default upper bound of a subscription batch. Default 500. */
  defaultBatchSize?: number;
  /**
   * While appends stream in, the shared tail waits this long after a wake-up for more before
   * reading (always, for a database in this process). Default 4 ms.
   */
  coalesceMs?: number;
  /**
   * Events of the shared in-memory tail that serves subscriptions at the head. Default 4096 on a
   * server, 16384 in process (PGlite; see the constructor).
   */
  tailCapacity?: number;
  /**
   * Append batches sent at once. Appends that arrive while that many are out go together in
   * the next batch: one statement and one commit for all of them. Default 1.
   */
  appendBatchesInFlight?: number;
  /**
   * Stream reads sent at once. Reads requested while that many are out go together in the
   * next statement, one round trip for all of them. Default 2.
   */
  streamReadsInFlight?: number;
  /** Close the SqlClient with the store, when the store is its only user. Default false. */
  closeClient?: boolean;
  /** A wake-up NOTIFY failed: subscribers in other processes wait for their poll. */
  onNotifyError?: (error: unknown) => void;
}

/** Appends one batch carries at most. */
const APPEND_BATCH_LIMIT = 64;

/** Stream reads one statement carries at most. */
const STREAM_READ_BATCH_LIMIT = 32;

/** Events one refresh of the shared tail reads at most. */
const TAIL_PAGE_SIZE = 1_000;

const START = encodePosition(LOG_START);

type TailRow = LogPageRow & { held_back: boolean };

/**
 * EventStore over Postgres (node-postgres or PGlite, same SQL). Appends are one autocommit
 * call of `event_store.append`, or under load several in one of `event_store.append_many`
 * (see append-batcher.ts); global reads are gated by the snapshot's xmin so that a
 * transaction committing late can never be skipped (see event-store.schema.ts). Subscriptions
 * at the head share one in-memory tail of the log, refreshed by one query per wake-up.
 */
export class PostgresEventStore implements EventStore {
  /** Tells this store's own wake-ups from other processes' on the shared channel. */
  private readonly instanceId = randomUUID();
  private readonly watcher: LogWatcher;
  private readonly tail: LogTail;
  private readonly tailPageSize: number;
  private readonly notifier: WakeNotifier;
  private readonly defaultBatchSize: number;
  private readonly stopHearingWrites: () => void;
  private readonly appends: AppendBatcher;
  /** Concurrent identical stream reads share one statement (see read-coalescer.ts). */
  private readonly streamReads = new ReadCoalescer<StreamEvents>();
  /** Concurrent reads of different streams share one statement under load (see stream-read-batcher.ts). */
  private readonly streamReadBatches: StreamReadBatcher;

  /** Which store this is, for metrics: Postgres over node-postgres, or embedded PGlite. */
  get kind(): 'postgres' | 'pglite' {
    return this.client.inProcess === true ? 'pglite' : 'postgres';
  }

  constructor(
    private readonly client: SqlClient,
    private readonly options: PostgresEventStoreOptions = {},
  ) {
    this.defaultBatchSize = options.defaultBatchSize ?? 500;
    this.appends = new AppendBatcher(client, {
      maxInFlight: options.appendBatchesInFlight ?? 1,
      maxBatch: APPEND_BATCH_LIMIT,
      // A server's tail reads each batch behind it, in its round trip. In process (PGlite) there
      // is no round trip to save, and the tail reads in batches (see `alwaysSettle`).
      readBehind: client.inProcess === true ? undefined : () => this.tailReadBehindAppend(),
    });
    this.streamReadBatches = new StreamReadBatcher(client, {
      maxInFlight: options.streamReadsInFlight ?? 2,
      maxBatch: STREAM_READ_BATCH_LIMIT,
    });
    // In process, a read model's batch may wait up to a second for PGlite to be quiet (background
    // transactions): in a burst more events than 4,096 arrive meanwhile, and each read model held
    // back then read the log again on its own instead of from the window.
    const tailCapacity = validateInteger('tailCapacity', options.tailCapacity ?? (client.inProcess === true ? 16_384 : 4_096), 1);
    this.tail = new LogTail(tailCapacity);
    this.tailPageSize = Math.min(TAIL_PAGE_SIZE, tailCapacity);
    this.watcher = new LogWatcher({
      probe: () => this.refreshTail(),
      listen: (onWake) =>
        client.listen(EVENTS_CHANNEL, (payload) => {
          if (payload !== this.instanceId) onWake();
        }),
      pollIntervalMs: options.pollIntervalMs ?? 500,
      settleMs: options.coalesceMs ?? 4,
      // In process (PGlite), a read early for one append is taken from the work that makes the
      // next ones: read in batches always. A server reads a lone append at once.
      alwaysSettle: client.inProcess === true,
    });
    this.stopHearingWrites = client.onWriteEnded?.(() => this.watcher.holderEnded()) ?? (() => undefined);
    // NOTIFY after commit, not inside the append: Postgres serializes the commits of notifying
    // transactions (one lock held through the WAL flush), which cut append throughput to a
    // third at 32 writers in bench/append.bench.ts.
    this.notifier = new WakeNotifier(() => client.notify(EVENTS_CHANNEL, this.instanceId), options.onNotifyError ?? (() => undefined));
  }

  /** Migrates the schema to the latest version, then opens the store. */
  static async open(client: SqlClient, options?: PostgresEventStoreOptions): Promise<PostgresEventStore> {
    await migrateEventStore(client);
    return new PostgresEventStore(client, options);
  }

  async appendToStream(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    validateStreamId(streamId);
    validateEvents(events);
    const [kind, revision] = expectedRevisionParams(options.expectedRevision);
    const payload = JSON.stringify(events.map(({ id, type, data, metadata }) => ({ id, type, data, metadata })));
    let row: AppendRow;
    let readBehind: boolean;
    try {
      ({ row, readBehind } = await this.appends.append({ streamId, kind, revision, events: payload }));
    } catch (error) {
      if (isDuplicateEventId(error)) {
        // The fact exists already (a retried deterministic id): a conflict, like a lost race.
        throw new WrongExpectedRevisionError(streamId, String(options.expectedRevision), await this.currentRevision(streamId));
      }
      throw error;
    }
    if (row.conflict) {
      throw new WrongExpectedRevisionError(streamId, String(options.expectedRevision), revisionName(Number(row.actual_revision)));
    }
    // A read of the tail behind the batch serves the subscriptions; else they probe.
    if (!readBehind) this.watcher.wake();
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
    const events = await this.streamReads.read(`${fromRevision}:${maxCount ?? ''}:${streamId}`, () =>
      this.streamReadBatches.read({ streamId, fromRevision, maxCount }),
    );
    // Each caller decodes its own events: callers of one shared read never see each other's objects.
    return toStreamEvents(streamId, events);
  }

  async readStreams(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
    streamIds.forEach(validateStreamId);
    const streams = new Map<string, RecordedEvent[]>();
    if (streamIds.length === 0) return streams;
    // Each stream once, from its first event, all of it.
    const ids = [...new Set(streamIds)];
    const { rows } = await this.client.query<StreamEventsRow>(READ_STREAMS_SQL, [ids, ids.map(() => 0), ids.map(() => null)]);
    for (const { ord, events } of rows) {
      const streamId = ids[Number(ord) - 1];
      if (events !== null) streams.set(streamId, toStreamEvents(streamId, events));
    }
    return streams;
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const maxCount = validateInteger('maxCount', options.maxCount, 1);
    const prefixes = validateStreamPrefixes(options.streamPrefixes);
    return (await this.readPage(options.after ?? null, maxCount, prefixes)).events;
  }

  async *subscribeToAll(options: SubscribeOptions): AsyncIterable<RecordedEvent[]> {
    const batchSize = validateInteger('batchSize', options.batchSize ?? this.defaultBatchSize, 1);
    const prefixes = validateStreamPrefixes(options.streamPrefixes);
    const after = options.after ?? START;
    decodePosition(after);
    if (options.signal.aborted) return;
    const source = { tail: this.tail, watcher: this.watcher, readPage: this.readPage.bind(this) };
    yield* subscribeToLog(source, { after, prefixes, batchSize, signal: options.signal });
  }

  async headPosition(): Promise<Position | null> {
    const { rows } = await this.client.query<HeadRow>(PROBE_SQL);
    return headPosition(rows[0]);
  }

  isPosition(text: string): boolean {
    return isPosition(text);
  }

  async isAheadOfLog(position: Position): Promise<boolean> {
    const { transactionId, seq } = decodePosition(position);
    const { rows } = await this.client.query<{ reached: boolean }>(REACHED_SQL, [transactionId.toString(), seq.toString()]);
    return rows[0]?.reached !== true;
  }

  async deleteStream(streamId: string, options: { expectedRevision: number }): Promise<void> {
    validateStreamId(streamId);
    const expected = validateInteger('expectedRevision', options.expectedRevision, 0);
    const { rows } = await this.client.query<{ conflict: boolean; actual_revision: string | number | null }>(DELETE_STREAM_SQL, [
      streamId,
      expected,
    ]);
    const row = rows[0];
    if (row?.conflict === true) throw new WrongExpectedRevisionError(streamId, String(expected), revisionName(Number(row.actual_revision)));
  }

  async close(): Promise<void> {
    this.stopHearingWrites();
    this.watcher.close();
    await this.notifier.flush();
    if (this.options.closeClient === true) await this.client.close();
  }

  private async readPage(after: Position | null, maxCount: number, prefixes: string[] | null): Promise<LogPage> {
    const from = after === null ? LOG_START : decodePosition(after);
    const { rows } = await this.client.query<LogPageRow>(READ_PAGE_SQL, [
      from.transactionId.toString(),
      from.seq.toString(),
      prefixes,
      maxCount,
    ]);
    const events = toLogEvents(rows[0]?.events ?? null).map(({ event }) => event);
    return { events, head: headPosition(rows[0]) };
  }

  /** The watcher's probe: one query extends the shared tail and tells whether events are held back. */
  private async refreshTail(): Promise<LogProbe> {
    const point = this.tail.refreshPoint();
    if (point === null) return { heldBack: false };
    const { rows } = await this.client.query<TailRow>(READ_TAIL_SQL, this.tailReadParams(point));
    return this.extendTail(point, rows) ?? { heldBack: false };
  }

  /** The tail's refresh sent behind an append batch: the watcher need not probe for that batch. */
  private tailReadBehindAppend(): ReadBehind | null {
    const point = this.tail.refreshPoint();
    if (point === null) return null;
    return {
      call: { sql: READ_TAIL_SQL, params: this.tailReadParams(point) },
      settle: (outcome) => {
        const probe = 'rows' in outcome ? this.extendTail(point, outcome.rows as TailRow[]) : null;
        // A failed read, or one for a window that stopped meanwhile: the watcher reads itself.
        if (probe === null) this.watcher.wake();
        else this.watcher.served(probe);
      },
    };
  }

  private tailReadParams(point: RefreshPoint): unknown[] {
    const after = decodePosition(point.after);
    return [after.transactionId.toString(), after.seq.toString(), this.tailPageSize];
  }

  /** Adds a tail read's events to the window; null when it was for a window that stopped since. */
  private extendTail(point: RefreshPoint, rows: TailRow[]): LogProbe | null {
    const page = toLogEvents(rows[0]?.events ?? null);
    const events = page.map(({ event }) => event);
    const more = events.length === this.tailPageSize;
    // A full page ends at its last event: the head lies further on, beyond events not read yet.
    if (!this.tail.extend(point, events, more ? null : headPosition(rows[0]))) return null;
    return { heldBack: rows[0]?.held_back === true, more, appends: new Set(page.map(({ xid }) => xid)).size };
  }

  private async currentRevision(streamId: string): Promise<string> {
    const { rows } = await this.client.query<{ revision: string | number }>(STREAM_REVISION_SQL, [streamId]);
    return revisionName(rows[0] === undefined ? null : Number(rows[0].revision));
  }
}
