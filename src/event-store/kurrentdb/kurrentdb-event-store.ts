import { randomUUID } from 'node:crypto';
import {
  ANY,
  BACKWARDS,
  END,
  NO_STREAM,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  type AppendExpectedRevision,
  type EventStoreDBClient,
  type ReadStreamOptions as ClientReadStreamOptions,
} from '@eventstore/db-client';
import { ValidationFailedError, WrongExpectedRevisionError } from '../../core/errors.js';
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
import {
  expectedRevisionParams,
  validateEvents,
  validateInteger,
  validateStreamId,
  validateStreamPrefixes,
} from '../postgres/event-store.validation.js';
import { readAllFiltered, streamFilter, subscribeAllFiltered } from './kurrentdb-all-reads.js';
import { closeKurrentDb, connectKurrentDb } from './kurrentdb-client.js';
import { appendTooLarge, toStoreError } from './kurrentdb-errors.js';
import { decodePosition, encodePosition, isPosition } from './kurrentdb-position.codec.js';
import { APPEND_ID_KEY, appendSize, fromClientEvent, toEventData } from './kurrentdb-records.js';
import { SubscriptionFeed } from './kurrentdb-subscription.js';

/** KurrentDB's default MaxAppendSize (1 MiB). */
export const DEFAULT_MAX_APPEND_SIZE = 1024 * 1024;

export interface KurrentDbEventStoreOptions {
  /** The server's MaxAppendSize in bytes: larger appends are refused before sending. Default 1 MiB. */
  maxAppendSize?: number;
  /** Default upper bound of a subscription batch. Default 500. */
  defaultBatchSize?: number;
  /**
   * Filter checkpoints arrive every `checkpointIntervalMultiplier` × the server's search window
   * (32) events the server scanned. Default 32: a sparse subscriber rescans at most ~1,024
   * events after a restart.
   */
  checkpointIntervalMultiplier?: number;
  /** Close the client with the store, when the store is its only user. Default true for `connect`. */
  closeClient?: boolean;
}

export interface KurrentDbSubscribeOptions extends SubscribeOptions {
  /**
   * Called with a filter checkpoint: every matching event at or before `position` has been
   * delivered and the consumer asked for more. Persist it and pass it back as `after` to
   * resume without rescanning the log skipped by the filter. Awaited before the next batch.
   */
  onCheckpoint?: (position: Position) => void | Promise<void>;
}

/**
 * EventStore over KurrentDB (EventStoreDB) through `@eventstore/db-client`. Global positions are
 * the server's commit and prepare positions (see kurrentdb-position.codec.ts); `$all` reads and
 * subscriptions are filtered on the server by stream prefix.
 */
export class KurrentDbEventStore implements EventStore {
  /** Which store this is, for metrics. */
  readonly kind = 'kurrentdb';
  private readonly maxAppendSize: number;
  private readonly defaultBatchSize: number;
  private readonly checkpointIntervalMultiplier: number;

  constructor(
    private readonly client: EventStoreDBClient,
    private readonly options: KurrentDbEventStoreOptions = {},
  ) {
    this.maxAppendSize = validateInteger('maxAppendSize', options.maxAppendSize ?? DEFAULT_MAX_APPEND_SIZE, 1);
    this.defaultBatchSize = validateInteger('defaultBatchSize', options.defaultBatchSize ?? 500, 1);
    this.checkpointIntervalMultiplier = validateInteger('checkpointIntervalMultiplier', options.checkpointIntervalMultiplier ?? 32, 1);
  }

  /** A store on its own client for an `esdb://` or `kurrentdb://` connection string. */
  static connect(url: string, options: KurrentDbEventStoreOptions = {}): KurrentDbEventStore {
    return new KurrentDbEventStore(connectKurrentDb(url), { closeClient: true, ...options });
  }

  async appendToStream(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    validateStreamId(streamId);
    validateEvents(events);
    expectedRevisionParams(options.expectedRevision);
    events.forEach((event, index) => {
      if (event.metadata !== undefined && APPEND_ID_KEY in event.metadata) {
        throw new ValidationFailedError(`invalid events[${index}].metadata: ${APPEND_ID_KEY} is reserved`, [
          { path: `events[${index}].metadata`, message: `${APPEND_ID_KEY} is reserved` },
        ]);
      }
    });
    const expected = String(options.expectedRevision);
    const appendId = randomUUID();
    const data = toEventData(events, appendId);
    const size = appendSize(data);
    if (size > this.maxAppendSize) throw appendTooLarge(size, this.maxAppendSize);

    let lastRevision: bigint;
    try {
      ({ nextExpectedRevision: lastRevision } = await this.client.appendToStream(streamId, data, {
        expectedRevision: clientExpectedRevision(options.expectedRevision),
      }));
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        throw new WrongExpectedRevisionError(streamId, expected, revisionName(error.actualVersion));
      }
      throw toStoreError(error);
    }
    // KurrentDB acknowledges a replayed event id (a retry, or a concurrent duplicate) with the
    // original write's result. Only our own append id on the last event proves this append wrote
    // it; anything else is the port's conflict: the fact was already there.
    const [last] = await this.readRaw(streamId, { fromRevision: lastRevision, maxCount: 1 });
    if (last?.appendId !== appendId) {
      throw new WrongExpectedRevisionError(streamId, expected, await this.currentRevision(streamId));
    }
    return { nextRevision: last.event.revision, position: last.event.position };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    validateStreamId(streamId);
    const fromRevision = validateInteger('fromRevision', options.fromRevision ?? 0, 0);
    const maxCount = options.maxCount === undefined ? undefined : validateInteger('maxCount', options.maxCount, 1);
    const read = await this.readRaw(streamId, { fromRevision: BigInt(fromRevision), maxCount });
    return read.map(({ event }) => event);
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const maxCount = validateInteger('maxCount', options.maxCount, 1);
    const filter = streamFilter(validateStreamPrefixes(options.streamPrefixes));
    const after = options.after ?? null;
    const from = after === null ? null : decodePosition(after);
    try {
      // The server reads from `from` inclusive: one more, then drop the event at `after`.
      const events = await readAllFiltered(this.client, from, filter, after === null ? maxCount : maxCount + 1);
      return events.filter((event) => after === null || event.position > after).slice(0, maxCount);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  async *subscribeToAll(options: KurrentDbSubscribeOptions): AsyncIterable<RecordedEvent[]> {
    const batchSize = validateInteger('batchSize', options.batchSize ?? this.defaultBatchSize, 1);
    const filter = streamFilter(validateStreamPrefixes(options.streamPrefixes));
    let cursor = options.after ?? null;
    const from = cursor === null ? null : decodePosition(cursor);
    const { signal, onCheckpoint } = options;
    if (signal.aborted) return;
    const feed = new SubscriptionFeed(
      await subscribeAllFiltered(this.client, from, filter, this.checkpointIntervalMultiplier),
      batchSize * 4,
    );
    try {
      while (!signal.aborted) {
        await feed.wait(signal);
        if (signal.aborted) return;
        const batch = feed.takeEvents(batchSize, cursor);
        if (batch.length > 0) {
          cursor = batch[batch.length - 1].position;
          yield batch;
          continue;
        }
        // The consumer is done with every event before this checkpoint: it asked for more.
        const checkpoint = feed.takeCheckpoint();
        if (checkpoint !== null && (cursor === null || checkpoint > cursor)) {
          cursor = checkpoint;
          await onCheckpoint?.(checkpoint);
        }
      }
    } finally {
      feed.close();
    }
  }

  async headPosition(): Promise<Position | null> {
    try {
      // Read to the end rather than return from inside the loop: a read left early is never
      // finished, and the client's close waits for every call it started.
      let head: Position | null = null;
      for await (const resolved of this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 })) {
        if (resolved.event?.position !== undefined) head = encodePosition(resolved.event.position);
      }
      return head;
    } catch (error) {
      throw toStoreError(error);
    }
  }

  isPosition(text: string): boolean {
    return isPosition(text);
  }

  async isAheadOfLog(position: Position): Promise<boolean> {
    decodePosition(position);
    // The server's log end holds every committed event: nothing is held back from readers here.
    const head = await this.headPosition();
    return head === null || position > head;
  }

  /** A soft delete: KurrentDB keeps the events in `$all` until a scavenge removes them (docs/operations.md, Retention). */
  async deleteStream(streamId: string, options: { expectedRevision: number }): Promise<void> {
    validateStreamId(streamId);
    const expected = validateInteger('expectedRevision', options.expectedRevision, 0);
    try {
      await this.client.deleteStream(streamId, { expectedRevision: BigInt(expected) });
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        if (typeof error.actualVersion !== 'bigint') return;
        throw new WrongExpectedRevisionError(streamId, String(expected), revisionName(error.actualVersion));
      }
      throw toStoreError(error);
    }
  }

  async close(): Promise<void> {
    if (this.options.closeClient === true) await closeKurrentDb(this.client);
  }

  private async readRaw(streamId: string, options: ClientReadStreamOptions) {
    try {
      const read = [];
      for await (const resolved of this.client.readStream(streamId, options)) read.push(fromClientEvent(resolved));
      return read;
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw toStoreError(error);
    }
  }

  private async currentRevision(streamId: string): Promise<string> {
    const [last] = await this.readRaw(streamId, { direction: BACKWARDS, fromRevision: END, maxCount: 1 });
    return last === undefined ? 'no_stream' : String(last.event.revision);
  }
}

function clientExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return BigInt(expected);
  }
}

function revisionName(revision: bigint | string | undefined): string {
  return typeof revision === 'bigint' ? revision.toString() : 'no_stream';
}
