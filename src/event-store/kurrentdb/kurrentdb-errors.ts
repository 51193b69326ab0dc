import {
  CancelledError,
  DeadlineExceededError,
  MaxAppendSizeExceededError,
  NotLeaderError,
  UnavailableError as ClientUnavailableError,
  convertToCommandError,
} from '@eventstore/db-client';
import { UnavailableError, ValidationFailedError } from '../../core/errors.js';

/** The refusal of an append larger than the server accepts, before or after sending it. */
export function appendTooLarge(size: number | null, limit: number): ValidationFailedError {
  const message =
    size === null
      ? `the append exceeds the event store's limit of ${limit} bytes`
      : `the append is ${size} bytes, more than the event store's limit of ${limit} bytes`;
  return new ValidationFailedError(message, [{ path: 'events', message }]);
}

/**
 * A client or gRPC failure as the port's error: a server that cannot answer now is
 * `UnavailableError` (the client reconnects on the next call); anything else is rethrown as is.
 */
export function toStoreError(error: unknown): unknown {
  const converted = error instanceof Error ? convertToCommandError(error) : error;
  if (converted instanceof MaxAppendSizeExceededError) return appendTooLarge(null, converted.maxAppendSize);
  if (
    converted instanceof ClientUnavailableError ||
    converted instanceof DeadlineExceededError ||
    converted instanceof CancelledError ||
    converted instanceof NotLeaderError
  ) {
    return new UnavailableError(`event store unavailable: ${converted.message}`);
  }
  return converted;
}
