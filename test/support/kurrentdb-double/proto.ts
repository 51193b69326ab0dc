/**
 * KurrentDB's gRPC messages and service definitions, as generated into `@eventstore/db-client`
 * (CommonJS, loaded through default imports), and small conversions the double needs.
 */
import serverFeaturesGrpc from '@eventstore/db-client/generated/serverfeatures_grpc_pb.js';
import serverFeaturesPb from '@eventstore/db-client/generated/serverfeatures_pb.js';
import sharedPb from '@eventstore/db-client/generated/shared_pb.js';
import statusPb from '@eventstore/db-client/generated/status_pb.js';
import streamsGrpc from '@eventstore/db-client/generated/streams_grpc_pb.js';
import streamsPb from '@eventstore/db-client/generated/streams_pb.js';
import anyPb from 'google-protobuf/google/protobuf/any_pb.js';
import emptyPb from 'google-protobuf/google/protobuf/empty_pb.js';
import type { StoredEvent } from './in-memory-log.js';

export { serverFeaturesGrpc, serverFeaturesPb, sharedPb, statusPb, streamsGrpc, streamsPb, anyPb, emptyPb };

export type ReadReq = InstanceType<typeof streamsPb.ReadReq>;
export type ReadResp = InstanceType<typeof streamsPb.ReadResp>;
export type AppendReq = InstanceType<typeof streamsPb.AppendReq>;
export type AppendResp = InstanceType<typeof streamsPb.AppendResp>;
export type BatchAppendReq = InstanceType<typeof streamsPb.BatchAppendReq>;
export type BatchAppendResp = InstanceType<typeof streamsPb.BatchAppendResp>;
type Uuid = InstanceType<typeof sharedPb.UUID>;
type StreamIdentifier = InstanceType<typeof sharedPb.StreamIdentifier>;

const utf8 = new TextDecoder();

export function streamName(identifier: StreamIdentifier | undefined): string {
  return utf8.decode(identifier?.getStreamName_asU8() ?? new Uint8Array());
}

export function streamIdentifier(name: string): StreamIdentifier {
  return new sharedPb.StreamIdentifier().setStreamName(new TextEncoder().encode(name));
}

/** A uuid in either wire form (the client sends strings; structured is the other option). */
export function uuidString(uuid: Uuid | undefined): string {
  if (uuid === undefined) return '';
  const structured = uuid.getStructured();
  if (structured === undefined) return uuid.getString().toLowerCase();
  const hex = (bits: string) => BigInt.asUintN(64, BigInt(bits)).toString(16).padStart(16, '0');
  const all = hex(structured.getMostSignificantBits()) + hex(structured.getLeastSignificantBits());
  return `${all.slice(0, 8)}-${all.slice(8, 12)}-${all.slice(12, 16)}-${all.slice(16, 20)}-${all.slice(20)}`;
}

/** A `ReadResp` carrying one event, as the server sends it on stream and `$all` reads. */
export function eventResponse(event: StoredEvent, withCommitPosition: boolean): ReadResp {
  const record = new streamsPb.ReadResp.ReadEvent.RecordedEvent()
    .setId(new sharedPb.UUID().setString(event.id))
    .setStreamIdentifier(streamIdentifier(event.streamId))
    .setStreamRevision(event.revision.toString())
    .setPreparePosition(event.position.toString())
    .setCommitPosition(event.position.toString())
    .setData(event.data)
    .setCustomMetadata(event.metadata);
  record.getMetadataMap().set('type', event.type).set('content-type', event.contentType).set('created', event.created.toString());
  const readEvent = new streamsPb.ReadResp.ReadEvent().setEvent(record);
  if (withCommitPosition) readEvent.setCommitPosition(event.position.toString());
  else readEvent.setNoPosition(new sharedPb.Empty());
  return new streamsPb.ReadResp().setEvent(readEvent);
}

/** A `google.rpc.Status` whose details pack one `event_store.client.*` message, as in BatchAppend. */
export function rpcStatus(code: number, message: string, details: { serializeBinary(): Uint8Array }, typeName: string) {
  const any = new anyPb.Any();
  any.pack(details.serializeBinary(), `event_store.client.${typeName}`);
  return new statusPb.Status().setCode(code).setMessage(message).setDetails(any);
}
