import type { Position, RecordedEvent } from '../../core/event-store.port.js';
import { reusable } from '../../postgres/sql-client.port.js';
import { encodePosition } from './position.codec.js';

/**
 * The SQL of the Postgres event store, identical for node-postgres and PGlite. Drivers differ
 * in how they return int8 (string or number) and timestamptz, so rows are normalized here.
 * Every statement the store runs again and again is reusable (prepared once per connection).
 */

/** `pg_current_snapshot()` is the statement's own snapshot: the xmin and the rows agree. */
const READABLE = 'e.transaction_id < pg_snapshot_xmin(pg_current_snapshot())';

const EVENT_COLUMNS = `e.event_id::text as event_id, e.type, e.stream_id, e.stream_revision,
  e.transaction_id::text as transaction_id, e.seq, e.data, e.metadata, e.recorded_at`;

export const APPEND_SQL = reusable('select * from event_store.append($1, $2, $3, $4::jsonb)');

/** Rows of `append_many`: one per append, `ord` its 1-based place in the batch. */
export const APPEND_MANY_SQL = reusable(
  'select ord, conflict, actual_revision, next_revision, position_xid, position_seq from event_store.append_many($1::jsonb)',
);

/**
 * One event of a stream as a JSON object in text, built by the database (see READ_STREAMS_SQL).
 * Positions are strings (64-bit), `at` is `recorded_at` in whole milliseconds since the epoch.
 */
const ENCODED_EVENT = `'{"id":"' || e.event_id::text || '","type":' || to_json(e.type)::text
  || ',"revision":' || e.stream_revision || ',"xid":"' || e.transaction_id::text || '","seq":"' || e.seq
  || '","data":' || e.data::text || ',"metadata":' || e.metadata::text
  || ',"at":' || floor(extract(epoch from e.recorded_at) * 1000) || '}'`;

/** ENCODED_EVENT with the event's stream: an event of the global log. */
const ENCODED_LOG_EVENT = `'{"stream":' || to_json(e.stream_id)::text || ',' || substr(${ENCODED_EVENT}, 2)`;

/**
 * Stream reads, several in one statement: read `ord` (1-based) is stream $1[ord] from revision
 * $2[ord], at most $3[ord] events (null: all). Each read is one row whose `events` is the
 * stream's events as one JSON array in text (null when there are none), in revision order. One
 * text field per stream instead of nine per event: in PGlite, decoding each field of each row in
 * JavaScript cost more than the database's work to read them. One snapshot answers them all.
 */
export const READ_STREAMS_SQL = reusable(`select r.ord, x.events from unnest($1::text[], $2::bigint[], $3::bigint[])
    with ordinality as r(stream_id, from_revision, max_count, ord)
  cross join lateral (select '[' || string_agg(${ENCODED_EVENT}, ',' order by e.stream_revision) || ']' as events
    from (select * from event_store.events s
      where s.stream_id = r.stream_id and s.stream_revision >= r.from_revision
      order by s.stream_revision
      limit r.max_count) e) x
  order by r.ord`);

/**
 * One stream read alone, row by row ($1 from revision $2, at most $3 events). For a few events,
 * building JSON in the database costs more than decoding the fields: READ_STREAMS_SQL wins only
 * for several streams at once.
 */
export const READ_STREAM_SQL = reusable(`select ${EVENT_COLUMNS} from event_store.events e
  where e.stream_id = $1 and e.stream_revision >= $2
  order by e.stream_revision
  limit $3`);

/** The last readable event, as `head_xid`, `head_seq` (no row for an empty log). */
const HEAD = `select e.transaction_id::text as head_xid, e.seq as head_seq from event_store.events e
  where ${READABLE} order by e.transaction_id desc, e.seq desc limit 1`;

/**
 * Events after the cursor ($1, $2) that a reader may see, at most `limit`, as one JSON array in
 * text (`events`, null for none) in position order: one field for a whole page, not nine per
 * event (see READ_STREAMS_SQL). Each event as ENCODED_EVENT, with its `stream`.
 */
function pageAfter(where: string, limit: string): string {
  return `select '[' || string_agg(p.encoded, ',' order by p.xid, p.seq) || ']' as events
    from (select ${ENCODED_LOG_EVENT} as encoded, e.transaction_id as xid, e.seq from event_store.events e
      where ${READABLE}
        and (e.transaction_id, e.seq) > ($1::xid8, $2::bigint)${where}
      order by e.transaction_id, e.seq
      limit ${limit}) p`;
}

/**
 * Committed events exist that readers may not see yet: an older transaction is still open.
 * Asked of the newest event (one index entry), never as "exists an event at or past xmin":
 * usually none is, and the planner answered that with a scan of the whole log.
 */
const HELD_BACK = `coalesce((select e.transaction_id from event_store.events e
    order by e.transaction_id desc, e.seq desc limit 1) >= pg_snapshot_xmin(pg_current_snapshot()), false) as held_back`;

const PREFIX_FILTER = `
      and ($3::text[] is null or exists (select 1 from unnest($3::text[]) as p(prefix) where starts_with(e.stream_id, p.prefix)))`;

/** The page after a cursor, plus the readable head in the same snapshot. */
export const READ_PAGE_SQL = reusable(`select head.head_xid, head.head_seq, page.events
  from (select 1) as anchor
  left join (${HEAD}) as head on true
  left join (${pageAfter(PREFIX_FILTER, '$4')}) as page on true`);

/** The shared tail's refresh: the unfiltered page after a cursor, the head, and held_back, in one snapshot. */
export const READ_TAIL_SQL = reusable(`select head.head_xid, head.head_seq, ${HELD_BACK}, page.events
  from (select 1) as anchor
  left join (${HEAD}) as head on true
  left join (${pageAfter('', '$3')}) as page on true`);

export const PROBE_SQL = reusable(`select head.head_xid, head.head_seq, ${HELD_BACK}
  from (select 1) as anchor left join (${HEAD}) as head on true`);

/**
 * Whether a committed event lies at or after the position ($1, $2), visible to global readers
 * or not, or a deleted one did (retention): a position a reader was handed (or an append
 * returned) always finds one.
 */
export const REACHED_SQL = reusable(`select exists (select 1 from event_store.events e
  where (e.transaction_id, e.seq) >= ($1::xid8, $2::bigint))
  or exists (select 1 from event_store.pruned p where (p.transaction_id, p.seq) >= ($1::xid8, $2::bigint)) as reached`);

export const DELETE_STREAM_SQL = reusable('select conflict, actual_revision from event_store.delete_stream($1, $2)');

export const STREAM_REVISION_SQL = reusable('select revision from event_store.streams where stream_id = $1');

export interface AppendRow {
  conflict: boolean;
  actual_revision: string | number | null;
  next_revision: string | number | null;
  position_xid: string | null;
  position_seq: string | number | null;
}

export interface EventRow {
  event_id: string;
  type: string;
  stream_id: string;
  stream_revision: string | number;
  transaction_id: string;
  seq: string | number;
  data: unknown;
  metadata: Record<string, unknown>;
  recorded_at: Date | string;
}

/** A row of READ_STREAMS_SQL. */
export interface StreamEventsRow {
  ord: string | number;
  events: string | null;
}

/** One event as ENCODED_EVENT writes it. */
interface EncodedEvent {
  id: string;
  type: string;
  revision: number;
  xid: string;
  seq: string;
  data: unknown;
  metadata: Record<string, unknown>;
  at: number;
}

/** A stream's events as READ_STREAM_SQL (rows) or READ_STREAMS_SQL (JSON text, null for none) returned them. */
export type StreamEvents = EventRow[] | string | null;

/** The events of one stream read, each its own object. */
export function toStreamEvents(streamId: string, events: StreamEvents): RecordedEvent[] {
  if (events === null) return [];
  if (typeof events !== 'string') return events.map(toRecordedEvent);
  return (JSON.parse(events) as EncodedEvent[]).map((event) => decoded(streamId, event));
}

function decoded(streamId: string, event: EncodedEvent): RecordedEvent {
  return {
    id: event.id,
    type: event.type,
    streamId,
    revision: event.revision,
    position: encodePosition({ transactionId: BigInt(event.xid), seq: BigInt(event.seq) }),
    data: event.data,
    metadata: event.metadata,
    recordedAt: new Date(event.at).toISOString(),
  };
}

/** One event of the log as ENCODED_LOG_EVENT writes it. */
interface EncodedLogEvent extends EncodedEvent {
  stream: string;
}

/** A page of the log (READ_PAGE_SQL, READ_TAIL_SQL): its events, the head, and the xid of each event's append. */
export interface LogPageRow extends HeadRow {
  /** JSON array in text, null for none. */
  events: string | null;
}

/** A page's events, in position order, each with the transaction id of its append. */
export function toLogEvents(events: string | null): { event: RecordedEvent; xid: string }[] {
  if (events === null) return [];
  return (JSON.parse(events) as EncodedLogEvent[]).map((event) => ({ event: decoded(event.stream, event), xid: event.xid }));
}

export interface HeadRow {
  head_xid: string | null;
  head_seq: string | number | null;
}

export function headPosition(row: HeadRow | undefined): Position | null {
  if (row === undefined || row.head_xid === null || row.head_seq === null) return null;
  return encodePosition({ transactionId: BigInt(row.head_xid), seq: BigInt(row.head_seq) });
}

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    type: row.type,
    streamId: row.stream_id,
    revision: Number(row.stream_revision),
    position: encodePosition({ transactionId: BigInt(row.transaction_id), seq: BigInt(row.seq) }),
    data: row.data,
    metadata: row.metadata,
    recordedAt: (row.recorded_at instanceof Date ? row.recorded_at : new Date(row.recorded_at)).toISOString(),
  };
}

/** 'no_stream' for a stream without events, else its revision, as WrongExpectedRevisionError wants it. */
export function revisionName(revision: number | null): string {
  return revision === null || revision < 0 ? 'no_stream' : String(revision);
}
