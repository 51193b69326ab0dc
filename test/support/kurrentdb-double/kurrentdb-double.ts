/**
 * A TEST DOUBLE of KurrentDB (EventStoreDB), not KurrentDB: an in-memory gRPC server that speaks
 * the subset of KurrentDB's client protocol that `@eventstore/db-client` v6 uses for this
 * project's event store adapter, with the service definitions shipped in the client's generated
 * code. It exists because KurrentDB cannot be installed on the machines that run the tests; the
 * same suites run against a real server when KURRENTDB_URL is set. See README.md beside this file
 * for what it covers and what it does not.
 */
import grpc from '@grpc/grpc-js';
import { appendHandler, batchAppendHandler } from './append-handlers.js';
import { deleteHandler } from './delete-handler.js';
import { InMemoryLog } from './in-memory-log.js';
import { serverFeaturesGrpc, serverFeaturesPb, streamsGrpc, type ReadReq, type ReadResp } from './proto.js';
import { readHandler } from './read-handler.js';

export interface KurrentDbDoubleOptions {
  /** The server's MaxAppendSize in bytes. Default 1 MiB, like KurrentDB. */
  maxAppendSize?: number;
  /** Advertise `Streams.BatchAppend` (what KurrentDB does, so the client uses it). Default true. */
  batchAppend?: boolean;
  /** Position of the first event. Default 1,000. */
  firstPosition?: bigint;
}

export interface KurrentDbDoubleStats {
  /** Appends that reached the server, whatever their outcome. */
  appendRequests: number;
  /** `$all` events read by subscriptions, matching their filter or not. */
  eventsConsidered: number;
}

export class KurrentDbDouble {
  private constructor(
    private readonly server: grpc.Server,
    readonly port: number,
    readonly log: InMemoryLog,
    readonly stats: KurrentDbDoubleStats,
    private readonly subscriptions: Set<grpc.ServerWritableStream<ReadReq, ReadResp>>,
  ) {}

  /** Starts a server on 127.0.0.1 and a free port. */
  static async start(options: KurrentDbDoubleOptions = {}): Promise<KurrentDbDouble> {
    const server = new grpc.Server();
    const log = new InMemoryLog(options.firstPosition ?? 1_000n);
    const stats: KurrentDbDoubleStats = { appendRequests: 0, eventsConsidered: 0 };
    const subscriptions = new Set<grpc.ServerWritableStream<ReadReq, ReadResp>>();
    const appendContext = {
      log,
      maxAppendSize: options.maxAppendSize ?? 1024 * 1024,
      onAppendRequest: () => void (stats.appendRequests += 1),
    };
    const unimplemented = (_call: unknown, callback?: grpc.sendUnaryData<never>) =>
      callback?.({ code: grpc.status.UNIMPLEMENTED, details: 'not part of the KurrentDB double' });
    server.addService(streamsGrpc.StreamsService, {
      read: readHandler({ log, subscriptions, onConsidered: () => void (stats.eventsConsidered += 1) }),
      append: appendHandler(appendContext),
      batchAppend: batchAppendHandler(appendContext),
      delete: deleteHandler(log),
      tombstone: unimplemented,
    });
    const batchAppend = options.batchAppend ?? true;
    server.addService(serverFeaturesGrpc.ServerFeaturesService, {
      getSupportedMethods: (_call: unknown, callback: grpc.sendUnaryData<InstanceType<typeof serverFeaturesPb.SupportedMethods>>) => {
        const methods = ['read', 'append', 'delete', ...(batchAppend ? ['batchappend'] : [])].map((name) =>
          new serverFeaturesPb.SupportedMethod().setServiceName('event_store.client.streams.streams').setMethodName(name),
        );
        callback(null, new serverFeaturesPb.SupportedMethods().setMethodsList(methods).setEventStoreServerVersion('24.10.0-double'));
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    return new KurrentDbDouble(server, port, log, stats, subscriptions);
  }

  /** The connection string a client uses: `esdb://127.0.0.1:<port>?tls=false`. */
  get url(): string {
    return `esdb://127.0.0.1:${this.port}?tls=false`;
  }

  /** Subscription calls the server is still serving. */
  get liveSubscriptions(): number {
    return this.subscriptions.size;
  }

  /** Ends every live subscription with UNAVAILABLE, as a server going away would. */
  failSubscriptions(): void {
    for (const call of this.subscriptions)
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'the KurrentDB double dropped the subscription' });
    this.subscriptions.clear();
  }

  /** Stops at once, cancelling open calls (clients see UNAVAILABLE). */
  async stop(): Promise<void> {
    this.server.forceShutdown();
  }
}
