/** The double's `Streams.Read`: stream reads, `$all` reads, and `$all` catch-up subscriptions. */
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import grpc from '@grpc/grpc-js';
import { matches, type EventFilter, type InMemoryLog, type StoredEvent } from './in-memory-log.js';
import { eventResponse, streamIdentifier, streamName, streamsPb, type ReadReq, type ReadResp } from './proto.js';

const { ReadReq: ReadRequest, ReadResp: ReadResponse } = streamsPb;
type Options = InstanceType<typeof ReadRequest.Options>;
type Call = grpc.ServerWritableStream<ReadReq, ReadResp>;

/** KurrentDB's default filter search window; checkpoints come every multiplier × window events. */
export const DEFAULT_SEARCH_WINDOW = 32;

export interface ReadContext {
  log: InMemoryLog;
  /** Live subscription calls, so a test can fail them all. */
  subscriptions: Set<Call>;
  /** Counts `$all` events a subscription considered (read and ran through its filter). */
  onConsidered(): void;
}

export function readHandler(context: ReadContext): grpc.handleServerStreamingCall<ReadReq, ReadResp> {
  return (call) => {
    const options = call.request.getOptions();
    if (options === undefined) return call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: 'read without options' });
    const run = options.hasAll()
      ? options.hasSubscription()
        ? subscribeAll(context, call, options)
        : readAll(context.log, call, options)
      : options.hasSubscription()
        ? Promise.reject(Object.assign(new Error('stream subscriptions are not part of the double'), { code: grpc.status.UNIMPLEMENTED }))
        : readStream(context.log, call, options);
    run.catch((error: { code?: number; message?: string }) => {
      call.emit('error', { code: error.code ?? grpc.status.INTERNAL, details: error.message ?? String(error) });
    });
  };
}

async function send(call: Call, response: ReadResp): Promise<void> {
  if (!call.write(response)) await once(call, 'drain');
}

function count(options: Options): number {
  return options.hasCount() ? Number(options.getCount()) : Number.MAX_SAFE_INTEGER;
}

async function readStream(log: InMemoryLog, call: Call, options: Options): Promise<void> {
  const streamOptions = options.getStream()!;
  const name = streamName(streamOptions.getStreamIdentifier());
  const stream = log.stream(name);
  if (stream === undefined) {
    await send(call, new ReadResponse().setStreamNotFound(new ReadResponse.StreamNotFound().setStreamIdentifier(streamIdentifier(name))));
    return void call.end();
  }
  const backwards = options.getReadDirection() === ReadRequest.Options.ReadDirection.BACKWARDS;
  const Case = ReadRequest.Options.StreamOptions.RevisionOptionCase;
  const revisionCase = streamOptions.getRevisionOptionCase();
  const from =
    revisionCase === Case.REVISION
      ? Number(streamOptions.getRevision())
      : revisionCase === Case.END
        ? stream.length - 1
        : backwards
          ? stream.length - 1
          : 0;
  const selected = backwards ? stream.slice(0, Math.min(from, stream.length - 1) + 1).reverse() : stream.slice(from);
  for (const event of selected.slice(0, count(options))) await send(call, eventResponse(event, false));
  call.end();
}

function filterOf(options: Options): { filter: EventFilter; checkpointInterval: number | null } {
  const filterOptions = options.getFilter();
  if (filterOptions === undefined) return { filter: null, checkpointInterval: null };
  const on = filterOptions.hasEventType() ? 'type' : 'stream';
  const expression = (on === 'type' ? filterOptions.getEventType() : filterOptions.getStreamIdentifier())!;
  const prefixes = expression.getPrefixList();
  const filter: EventFilter = prefixes.length > 0 ? { on, prefixes } : { on, regex: new RegExp(expression.getRegex()) };
  const window = filterOptions.hasMax() ? filterOptions.getMax() : DEFAULT_SEARCH_WINDOW;
  return { filter, checkpointInterval: Math.max(1, filterOptions.getCheckpointintervalmultiplier()) * window };
}

/** Forward reads start at the given position inclusive; backward reads end before it. */
async function readAll(log: InMemoryLog, call: Call, options: Options): Promise<void> {
  const all = options.getAll()!;
  const { filter } = filterOf(options);
  const backwards = options.getReadDirection() === ReadRequest.Options.ReadDirection.BACKWARDS;
  const Case = ReadRequest.Options.AllOptions.AllOptionCase;
  const position = all.getAllOptionCase() === Case.POSITION ? BigInt(all.getPosition()!.getCommitPosition()) : null;
  let selected: StoredEvent[];
  if (backwards) {
    selected = log.events.slice(0, position === null ? log.events.length : log.indexAfter(position, true)).reverse();
  } else {
    selected = log.events.slice(
      position === null ? (all.getAllOptionCase() === Case.END ? log.events.length : 0) : log.indexAfter(position, true),
    );
  }
  let sent = 0;
  const max = count(options);
  for (const event of selected) {
    if (sent >= max) break;
    if (!matches(filter, event)) continue;
    await send(call, eventResponse(event, true));
    sent++;
  }
  call.end();
}

/**
 * Catch-up then live, strictly after the start position. Filtered subscriptions get a checkpoint
 * (the last considered event's position) every `checkpointInterval` considered events and on
 * catching up, then a caught-up notice, as KurrentDB's `AllSubscriptionFiltered` does.
 */
async function subscribeAll(context: ReadContext, call: Call, options: Options): Promise<void> {
  const { log } = context;
  const all = options.getAll()!;
  const { filter, checkpointInterval } = filterOf(options);
  const Case = ReadRequest.Options.AllOptions.AllOptionCase;
  let next =
    all.getAllOptionCase() === Case.POSITION
      ? log.indexAfter(BigInt(all.getPosition()!.getCommitPosition()))
      : all.getAllOptionCase() === Case.END
        ? log.events.length
        : 0;
  let cancelled = false;
  let wake: (() => void) | null = null;
  const stopListening = log.onAppend(() => wake?.());
  call.on('cancelled', () => {
    cancelled = true;
    wake?.();
  });
  context.subscriptions.add(call);
  try {
    await send(call, new ReadResponse().setConfirmation(new ReadResponse.SubscriptionConfirmation().setSubscriptionId(randomUUID())));
    let considered = 0;
    let lastConsidered: bigint | null = null;
    let caughtUp = false;
    while (!cancelled) {
      while (!cancelled && next < log.events.length) {
        const event = log.events[next++];
        context.onConsidered();
        considered++;
        lastConsidered = event.position;
        if (matches(filter, event)) await send(call, eventResponse(event, true));
        if (checkpointInterval !== null && considered >= checkpointInterval) {
          considered = 0;
          await send(call, checkpoint(event.position));
        }
      }
      if (cancelled) break;
      if (!caughtUp) {
        caughtUp = true;
        if (checkpointInterval !== null && lastConsidered !== null) await send(call, checkpoint(lastConsidered));
        await send(call, new ReadResponse().setCaughtUp(new ReadResponse.CaughtUp()));
      }
      if (next >= log.events.length) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
      }
    }
  } finally {
    stopListening();
    context.subscriptions.delete(call);
  }
}

function checkpoint(position: bigint): ReadResp {
  return new ReadResponse().setCheckpoint(
    new ReadResponse.Checkpoint().setCommitPosition(position.toString()).setPreparePosition(position.toString()),
  );
}
