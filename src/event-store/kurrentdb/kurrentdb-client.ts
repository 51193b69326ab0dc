import type { CallOptions, Channel, ClientReadableStream, Metadata } from '@grpc/grpc-js';
import { EventStoreDBClient } from '@eventstore/db-client';
import streamsGrpc from '@eventstore/db-client/generated/streams_grpc_pb.js';
import type { ReadReq, ReadResp } from '@eventstore/db-client/generated/streams_pb.js';

type StreamsClient = InstanceType<typeof streamsGrpc.StreamsClient>;

/**
 * The protected members of `EventStoreDBClient` this adapter uses. The v6 client's `readAll`
 * sends no server-side filter, so filtered `$all` reads and subscriptions issue the same
 * `Streams.Read` RPC themselves, over the client's channel, credentials and reconnect handling.
 */
interface ClientInternals {
  GRPCStreamCreator<T extends ClientReadableStream<ReadResp>>(
    client: typeof streamsGrpc.StreamsClient,
    debugName: string,
    creator: (client: StreamsClient) => T,
  ): () => Promise<T>;
  callArguments(options: Record<string, never>, callOptions?: CallOptions): [Metadata, CallOptions];
  getChannel(): Promise<Channel>;
}

/**
 * A client for `esdb://` or `kurrentdb://` URLs (the v6 client parses only the `esdb` schemes;
 * both name the same connection-string format).
 */
export function connectKurrentDb(url: string): EventStoreDBClient {
  return EventStoreDBClient.connectionString(
    url.replace(/^kurrentdb(\+discover)?:\/\//i, (_, discover: string | undefined) => `esdb${discover ?? ''}://`),
  );
}

/** Opens a `Streams.Read` call (a read or a subscription) on the client's channel. */
export function openRead(client: EventStoreDBClient, request: ReadReq, debugName: string): Promise<ClientReadableStream<ReadResp>> {
  const internals = client as unknown as ClientInternals;
  return internals.GRPCStreamCreator(streamsGrpc.StreamsClient, debugName, (grpcClient) =>
    grpcClient.read(request, ...internals.callArguments({}, { deadline: Infinity })),
  )();
}

/** Cancels the client's open calls and closes its channel, so the process can exit. */
export async function closeKurrentDb(client: EventStoreDBClient): Promise<void> {
  await client.dispose();
  (await (client as unknown as ClientInternals).getChannel()).close();
}
