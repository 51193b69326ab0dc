/** The double's `Streams.Delete` (soft delete) at an exact expected revision, the one form the adapter sends. */
import grpc from '@grpc/grpc-js';
import type { InMemoryLog } from './in-memory-log.js';
import { sharedPb, streamName, streamsPb } from './proto.js';

type DeleteReq = InstanceType<typeof streamsPb.DeleteReq>;
type DeleteResp = InstanceType<typeof streamsPb.DeleteResp>;

export function deleteHandler(log: InMemoryLog): grpc.handleUnaryCall<DeleteReq, DeleteResp> {
  return (call, callback) => {
    const options = call.request.getOptions();
    const Case = streamsPb.DeleteReq.Options.ExpectedStreamRevisionCase;
    if (options === undefined || options.getExpectedStreamRevisionCase() !== Case.REVISION) {
      return callback({ code: grpc.status.UNIMPLEMENTED, details: 'the KurrentDB double deletes at an exact revision only' });
    }
    const stream = streamName(options.getStreamIdentifier());
    const expected = BigInt(options.getRevision() || '0');
    const outcome = log.deleteStream(stream, expected);
    if (outcome.kind === 'deleted') return callback(null, new streamsPb.DeleteResp().setNoPosition(new sharedPb.Empty()));
    // As the server reports it on unary calls: trailers the client turns into WrongExpectedVersionError.
    const metadata = new grpc.Metadata();
    metadata.set('exception', 'wrong-expected-version');
    metadata.set('stream-name', stream);
    metadata.set('expected-version', expected.toString());
    if (outcome.current !== null) metadata.set('actual-version', outcome.current.toString());
    callback({ code: grpc.status.FAILED_PRECONDITION, details: 'Wrong expected version.', metadata });
  };
}
