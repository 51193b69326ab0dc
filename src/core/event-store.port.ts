/**
 * The event store port. Every adapter (Postgres over pg, Postgres over PGlite, KurrentDB)
 * passes the contract suite in test/contract/event-store.contract.ts.
 */

/** Revision of the last event in a stream: 0 for the first event. A stream with no events has none. */
export type StreamRevision = number;

/**
 * What an append expects of the stream:
 * - 'any': no check;
 * - 'no_stream': the stream has no events yet;
 * - 'stream_exists': the stream has at least one event;
 * - a number: the revision of the stream's last event.
 */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | StreamRevision;

/** An opaque, totally ordered cursor into the global log. Clients only echo it back. */
export type Position = string;

export interface EventToAppend {
  /** A uuid. Deterministic when a retry must not produce a second fact. */
  id: string;
  type: string;
  data: unknown;
  metadata?: Record<string, unknown>;
}

export interface RecordedEvent {
  id: string;
  type: string;
  streamId: string;
  revision: StreamRevision;
  position: Position;
  data: unknown;
  metadata: Record<string, unknown>;
  /** ISO-8601 time at which the store recorded the event. */
  recordedAt: string;
}

export interface AppendResult {
  /** Revision of the last appended event. */
  nextRevision: StreamRevision;
  /** Global position of the last appended event. */
  position: Position;
}

export interface ReadStreamOptions {
  /** First revision to return (inclusive); 0 by default. */
  fromRevision?: StreamRevision;
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Return events strictly after this position; from the start when null or absent. */
  after?: Position | null;
  maxCount: number;
  /** Only events of streams whose id starts with one of these prefixes. */
  streamPrefixes?: string[];
}

export interface SubscribeOptions {
  after?: Position | null;
  streamPrefixes?: string[];
  /** Upper bound on the number of events in one delivered batch. */
  batchSize?: number;
  signal: AbortSignal;
}

export interface EventStore {
  /**
   * Appends atomically: all events or none. Throws WrongExpectedRevisionError when the stream
   * does not match `expectedRevision` (also when an event id already exists in the store).
   */
  appendToStream(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;
  /** Events of one stream in revision order; [] for a stream that does not exist. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /**
   * Several whole streams in one read, each in revision order (absent: no events). Optional: a
   * store that cannot read them together leaves it out, and callers read stream by stream.
   */
  readStreams?(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>>;
  /**
   * The global log after a position, in position order. Never returns an event while an
   * event with a smaller position may still be committed later.
   */
  readAll(options: ReadAllOptions): Promise<RecordedEvent[]>;
  /**
   * Catch-up subscription: history after `after`, then live appends, as non-empty batches in
   * position order, each event exactly once. Ends when `signal` aborts; throws on store failure.
   */
  subscribeToAll(options: SubscribeOptions): AsyncIterable<RecordedEvent[]>;
  /** Position of the last event in the global log (null for an empty log). */
  headPosition(): Promise<Position | null>;
  /**
   * Whether `text` has the form of this store's positions: one it could have handed out, though
   * not necessarily the position of an event. No I/O. Positions of one store are fixed-width
   * strings, so among valid ones plain string order is log order.
   */
  isPosition(text: string): boolean;
  /**
   * Whether a valid position (`isPosition`) lies beyond the last committed event: the log has
   * not reached it, so no reader of this store was ever handed it. Events committed but not yet
   * visible to global readers (behind an older open transaction) count: the position an append
   * returned is never ahead.
   */
  isAheadOfLog(position: Position): Promise<boolean>;
  /**
   * Deletes a stream and its events when its last event is at `expectedRevision` (retention:
   * docs/operations.md). Positions of deleted events are never handed out again. Throws
   * WrongExpectedRevisionError when the stream moved on; a stream without events is left alone.
   */
  deleteStream(streamId: string, options: { expectedRevision: StreamRevision }): Promise<void>;
  /** Releases connections; only for the owner of the store. */
  close(): Promise<void>;
}

export const EVENT_STORE = Symbol('EventStore');
