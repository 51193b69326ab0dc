import type { JSONEventData, JSONType, ResolvedEvent } from '@eventstore/db-client';
import type { ReadResp } from '@eventstore/db-client/generated/streams_pb.js';
import type { EventToAppend, RecordedEvent } from '../../core/event-store.port.js';
import { encodePosition } from './kurrentdb-position.codec.js';

/**
 * Metadata key that tags the last event of an append with that append's own id. KurrentDB
 * answers a replayed event id with the original write's success; reading the tag back tells
 * a write of ours from such a replay (see KurrentDbEventStore.appendToStream). Never returned.
 */
export const APPEND_ID_KEY = '$flostra.appendId';

const JSON_CONTENT_TYPE = 'application/json';
const TICKS_PER_MILLISECOND = 10_000n;
const utf8 = new TextDecoder('utf-8', { fatal: false });

/** The client's event data for one append; the last event carries the append id. */
export function toEventData(events: EventToAppend[], appendId: string): JSONEventData[] {
  return events.map((event, index) => {
    const metadata = index === events.length - 1 ? { ...event.metadata, [APPEND_ID_KEY]: appendId } : event.metadata;
    return {
      id: event.id.toLowerCase(),
      contentType: JSON_CONTENT_TYPE,
      type: event.type,
      // The port's data is any JSON value; the client serialises it with JSON.stringify.
      data: (event.data === undefined ? null : event.data) as JSONType,
      metadata,
    };
  });
}

/**
 * Bytes the server counts against its MaxAppendSize: data, metadata and twice the type's
 * length (KurrentDB `Event.SizeOnDisk`, summed over the append).
 */
export function appendSize(events: JSONEventData[]): number {
  return events.reduce((total, event) => {
    const data = Buffer.byteLength(JSON.stringify(event.data) ?? '', 'utf8');
    const metadata = event.metadata === undefined ? 0 : Buffer.byteLength(JSON.stringify(event.metadata), 'utf8');
    return total + data + metadata + event.type.length * 2;
  }, 0);
}

interface RawRecord {
  id: string;
  type: string;
  streamId: string;
  revision: bigint;
  commit: bigint;
  prepare: bigint;
  data: unknown;
  metadata: unknown;
  created: Date;
}

/** An event read through the client's public API (stream reads). */
export function fromClientEvent(resolved: ResolvedEvent): { event: RecordedEvent; appendId: string | null } {
  const record = resolved.event;
  if (record === undefined) throw new Error('KurrentDB returned a read result without an event');
  if (record.position === undefined) {
    throw new Error('KurrentDB returned a stream event without its global position: the server must be 22.6 or later');
  }
  return toRecordedEvent({
    id: record.id,
    type: record.type,
    streamId: record.streamId,
    revision: record.revision,
    commit: record.position.commit,
    prepare: record.position.prepare,
    data: record.data,
    metadata: record.metadata,
    created: record.created,
  });
}

/** An event of a `Streams.Read` response this adapter requested itself ($all reads). */
export function fromReadResponse(message: ReadResp.ReadEvent): RecordedEvent {
  const record = message.getEvent();
  if (record === undefined) throw new Error('KurrentDB returned a read result without an event');
  const fields = record.getMetadataMap();
  const isJson = fields.get('content-type') === JSON_CONTENT_TYPE;
  const data = record.getData_asU8();
  const metadata = record.getCustomMetadata_asU8();
  const created = fields.get('created');
  return toRecordedEvent({
    id: record.getId()?.getString() ?? '',
    type: fields.get('type') ?? '',
    streamId: utf8.decode(record.getStreamIdentifier()?.getStreamName_asU8() ?? new Uint8Array()),
    revision: BigInt(record.getStreamRevision()),
    commit: BigInt(record.getCommitPosition()),
    prepare: BigInt(record.getPreparePosition()),
    data: isJson ? parseJson(data) : data,
    metadata: metadata.length === 0 ? undefined : parseJson(metadata),
    created: new Date(created === undefined ? 0 : Number(BigInt(created) / TICKS_PER_MILLISECOND)),
  }).event;
}

function toRecordedEvent(raw: RawRecord): { event: RecordedEvent; appendId: string | null } {
  let metadata: Record<string, unknown> = {};
  let appendId: string | null = null;
  if (typeof raw.metadata === 'object' && raw.metadata !== null && !Array.isArray(raw.metadata) && !(raw.metadata instanceof Uint8Array)) {
    const { [APPEND_ID_KEY]: tag, ...rest } = raw.metadata as Record<string, unknown>;
    metadata = rest;
    appendId = typeof tag === 'string' ? tag : null;
  }
  return {
    event: {
      id: raw.id,
      type: raw.type,
      streamId: raw.streamId,
      revision: Number(raw.revision),
      position: encodePosition({ commit: raw.commit, prepare: raw.prepare }),
      data: raw.data,
      metadata,
      recordedAt: raw.created.toISOString(),
    },
    appendId,
  };
}

/** Events this project wrote are JSON; bytes that are not stay bytes rather than failing a read. */
function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    return bytes;
  }
}
