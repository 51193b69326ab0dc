import { convertToCommandError, type EventStoreDBClient } from '@eventstore/db-client';
import sharedPb from '@eventstore/db-client/generated/shared_pb.js';
import streamsPb from '@eventstore/db-client/generated/streams_pb.js';
import type { ClientReadableStream } from '@grpc/grpc-js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { openRead } from './kurrentdb-client.js';
import type { LogPosition } from './kurrentdb-position.codec.js';
import { fromReadResponse } from './kurrentdb-records.js';

const { ReadReq } = streamsPb;
type ReadResp = InstanceType<typeof streamsPb.ReadResp>;

/** Which streams of `$all` the server sends: those starting with a prefix, or matching a regex. */
export type StreamFilter = { prefixes: string[] } | { regex: string };

/** Every stream but KurrentDB's own (`$`-prefixed system streams). */
export const USER_STREAMS: StreamFilter = { regex: '^[^$]' };

export function streamFilter(prefixes: string[] | null): StreamFilter {
  return prefixes === null ? USER_STREAMS : { prefixes };
}

/**
 * A forward `$all` read filtered on the server. The server starts at `from` inclusive and
 * pages through the log until `maxCount` events matched or the log ends.
 */
export async function readAllFiltered(
  client: EventStoreDBClient,
  from: LogPosition | null,
  filter: StreamFilter,
  maxCount: number,
): Promise<RecordedEvent[]> {
  const options = allOptions(from, filter, 1);
  options.setCount(String(maxCount));
  const request = new ReadReq().setOptions(options);
  const call = await openRead(client, request, 'readAll');
  const events: RecordedEvent[] = [];
  try {
    for await (const message of call as AsyncIterable<ReadResp>) {
      const event = message.getEvent();
      if (event !== undefined) events.push(fromReadResponse(event));
    }
  } catch (error) {
    throw convertToCommandError(error as Error);
  }
  return events;
}

/**
 * A catch-up subscription to `$all` filtered on the server, starting strictly after `from`.
 * The server sends a checkpoint every `checkpointIntervalMultiplier` × its search window of
 * considered events, and one on catching up.
 */
export function subscribeAllFiltered(
  client: EventStoreDBClient,
  from: LogPosition | null,
  filter: StreamFilter,
  checkpointIntervalMultiplier: number,
): Promise<ClientReadableStream<ReadResp>> {
  const options = allOptions(from, filter, checkpointIntervalMultiplier);
  options.setSubscription(new ReadReq.Options.SubscriptionOptions());
  return openRead(client, new ReadReq().setOptions(options), 'subscribeToAll');
}

function allOptions(from: LogPosition | null, filter: StreamFilter, checkpointIntervalMultiplier: number) {
  const all = new ReadReq.Options.AllOptions();
  if (from === null) {
    all.setStart(new sharedPb.Empty());
  } else {
    all.setPosition(new ReadReq.Options.Position().setCommitPosition(from.commit.toString()).setPreparePosition(from.prepare.toString()));
  }
  const expression = new ReadReq.Options.FilterOptions.Expression();
  if ('prefixes' in filter) expression.setPrefixList(filter.prefixes);
  else expression.setRegex(filter.regex);
  const filterOptions = new ReadReq.Options.FilterOptions()
    .setStreamIdentifier(expression)
    .setCount(new sharedPb.Empty())
    .setCheckpointintervalmultiplier(checkpointIntervalMultiplier);
  return new ReadReq.Options()
    .setAll(all)
    .setReadDirection(ReadReq.Options.ReadDirection.FORWARDS)
    .setResolveLinks(false)
    .setFilter(filterOptions)
    .setUuidOption(new ReadReq.Options.UUIDOption().setString(new sharedPb.Empty()));
}
