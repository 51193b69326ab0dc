/** The double's `Streams.Append` (one append per call) and `Streams.BatchAppend` (multiplexed). */
import grpc from '@grpc/grpc-js';
import { sizeOnDisk, type AppendOutcome, type Expected, type InMemoryLog, type ProposedEvent } from './in-memory-log.js';
import {
  emptyPb,
  rpcStatus,
  sharedPb,
  streamIdentifier,
  streamName,
  streamsPb,
  uuidString,
  type AppendReq,
  type AppendResp,
  type BatchAppendReq,
  type BatchAppendResp,
} from './proto.js';

const { AppendReq: AppendRequest, BatchAppendReq: BatchAppendRequest } = streamsPb;

export interface AppendContext {
  log: InMemoryLog;
  maxAppendSize: number;
  /** Counts append requests that reached the server (tests prove a refusal happened client-side). */
  onAppendRequest(): void;
}

type ProposedMessage =
  InstanceType<typeof streamsPb.AppendReq.ProposedMessage> | InstanceType<typeof streamsPb.BatchAppendReq.ProposedMessage>;

function proposed(message: ProposedMessage): ProposedEvent {
  const metadata = message.getMetadataMap();
  return {
    id: uuidString(message.getId()),
    type: metadata.get('type') ?? '',
    contentType: metadata.get('content-type') ?? 'application/octet-stream',
    data: message.getData_asU8(),
    metadata: message.getCustomMetadata_asU8(),
  };
}

/** Legacy append: options first, then the events; the reply is one `AppendResp`. */
export function appendHandler(context: AppendContext): grpc.handleClientStreamingCall<AppendReq, AppendResp> {
  return (call, callback) => {
    let options: InstanceType<typeof AppendRequest.Options> | undefined;
    const events: ProposedEvent[] = [];
    call.on('data', (request: AppendReq) => {
      options ??= request.getOptions();
      const message = request.getProposedMessage();
      if (message !== undefined) events.push(proposed(message));
    });
    call.on('end', () => {
      if (options === undefined) return callback({ code: grpc.status.INVALID_ARGUMENT, details: 'append without options' });
      context.onAppendRequest();
      if (events.reduce((total, event) => total + sizeOnDisk(event), 0) > context.maxAppendSize) {
        const metadata = new grpc.Metadata();
        metadata.set('exception', 'maximum-append-size-exceeded');
        metadata.set('maximum-append-size', String(context.maxAppendSize));
        return callback({
          code: grpc.status.INVALID_ARGUMENT,
          details: `Maximum Append Size of ${context.maxAppendSize} Exceeded.`,
          metadata,
        });
      }
      const Case = AppendRequest.Options.ExpectedStreamRevisionCase;
      const expected: Expected = {
        [Case.ANY]: 'any' as const,
        [Case.NO_STREAM]: 'no_stream' as const,
        [Case.STREAM_EXISTS]: 'stream_exists' as const,
        [Case.REVISION]: BigInt(options.getRevision() || '0'),
        [Case.EXPECTED_STREAM_REVISION_NOT_SET]: 'any' as const,
      }[options.getExpectedStreamRevisionCase()];
      callback(null, appendResponse(context.log.append(streamName(options.getStreamIdentifier()), expected, events), expected));
    });
  };
}

function appendResponse(outcome: AppendOutcome, expected: Expected): AppendResp {
  if (outcome.kind === 'success') {
    const position = new streamsPb.AppendResp.Position()
      .setCommitPosition(outcome.position.toString())
      .setPreparePosition(outcome.position.toString());
    return new streamsPb.AppendResp().setSuccess(
      new streamsPb.AppendResp.Success().setCurrentRevision(outcome.lastRevision.toString()).setPosition(position),
    );
  }
  const conflict = new streamsPb.AppendResp.WrongExpectedVersion();
  if (outcome.current === null) conflict.setCurrentNoStream(new sharedPb.Empty());
  else conflict.setCurrentRevision(outcome.current.toString());
  if (expected === 'any') conflict.setExpectedAny(new sharedPb.Empty());
  else if (expected === 'no_stream') conflict.setExpectedNoStream(new sharedPb.Empty());
  else if (expected === 'stream_exists') conflict.setExpectedStreamExists(new sharedPb.Empty());
  else conflict.setExpectedRevision(expected.toString());
  return new streamsPb.AppendResp().setWrongExpectedVersion(conflict);
}

interface PendingBatch {
  streamId: string;
  expected: Expected;
  events: ProposedEvent[];
  size: number;
}

/**
 * Batch append: one long-lived duplex call carries many appends, told apart by correlation id;
 * an append may span several requests until `is_final`. Failures are per append, as a
 * `google.rpc.Status` with the KurrentDB error packed in its details.
 */
export function batchAppendHandler(context: AppendContext): grpc.handleBidiStreamingCall<BatchAppendReq, BatchAppendResp> {
  return (call) => {
    const pending = new Map<string, PendingBatch>();
    call.on('data', (request: BatchAppendReq) => {
      const correlationId = uuidString(request.getCorrelationId());
      const options = request.getOptions();
      if (options !== undefined) {
        const Case = BatchAppendRequest.Options.ExpectedStreamPositionCase;
        const expected: Expected = {
          [Case.ANY]: 'any' as const,
          [Case.NO_STREAM]: 'no_stream' as const,
          [Case.STREAM_EXISTS]: 'stream_exists' as const,
          [Case.STREAM_POSITION]: BigInt(options.getStreamPosition() || '0'),
          [Case.EXPECTED_STREAM_POSITION_NOT_SET]: 'any' as const,
        }[options.getExpectedStreamPositionCase()];
        pending.set(correlationId, { streamId: streamName(options.getStreamIdentifier()), expected, events: [], size: 0 });
      }
      const batch = pending.get(correlationId);
      if (batch === undefined) return;
      for (const message of request.getProposedMessagesList()) {
        const event = proposed(message);
        batch.events.push(event);
        batch.size += sizeOnDisk(event);
      }
      const response = new streamsPb.BatchAppendResp()
        .setCorrelationId(request.getCorrelationId())
        .setStreamIdentifier(streamIdentifier(batch.streamId));
      if (batch.size > context.maxAppendSize) {
        pending.delete(correlationId);
        context.onAppendRequest();
        const details = new sharedPb.MaximumAppendSizeExceeded().setMaxappendsize(context.maxAppendSize);
        call.write(
          response.setError(rpcStatus(grpc.status.INVALID_ARGUMENT, 'Maximum Append Size Exceeded', details, 'MaximumAppendSizeExceeded')),
        );
        return;
      }
      if (!request.getIsFinal()) return;
      pending.delete(correlationId);
      context.onAppendRequest();
      call.write(batchResponse(response, context.log.append(batch.streamId, batch.expected, batch.events), batch.expected));
    });
    call.on('end', () => call.end());
    call.on('error', () => undefined);
  };
}

function batchResponse(response: BatchAppendResp, outcome: AppendOutcome, expected: Expected): BatchAppendResp {
  if (outcome.kind === 'success') {
    const position = new sharedPb.AllStreamPosition()
      .setCommitPosition(outcome.position.toString())
      .setPreparePosition(outcome.position.toString());
    return response.setSuccess(
      new streamsPb.BatchAppendResp.Success().setCurrentRevision(outcome.lastRevision.toString()).setPosition(position),
    );
  }
  const details = new sharedPb.WrongExpectedVersion();
  if (outcome.current === null) details.setCurrentNoStream(new emptyPb.Empty());
  else details.setCurrentStreamRevision(outcome.current.toString());
  if (expected === 'any') details.setExpectedAny(new emptyPb.Empty());
  else if (expected === 'no_stream') details.setExpectedNoStream(new emptyPb.Empty());
  else if (expected === 'stream_exists') details.setExpectedStreamExists(new emptyPb.Empty());
  else details.setExpectedStreamPosition(expected.toString());
  return response.setError(rpcStatus(grpc.status.FAILED_PRECONDITION, 'Wrong expected version.', details, 'WrongExpectedVersion'));
}
