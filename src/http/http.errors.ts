import { DomainError } from '../core/errors.js';

/** A request body over FLOSTRA_MAX_BODY_BYTES. HTTP 413. */
export class PayloadTooLargeError extends DomainError {
  constructor(limitBytes: number) {
    super('payload_too_large', `the request body exceeds the limit of ${limitBytes} bytes`, { limitBytes });
  }
}

/** A request body that did not arrive within FLOSTRA_HTTP_BODY_TIMEOUT_MS. HTTP 408. */
export class RequestTimeoutError extends DomainError {
  constructor(timeoutMs: number) {
    super('request_timeout', `the request body did not arrive within ${timeoutMs} ms`, { timeoutMs });
  }
}

/** A request body that is not JSON (or not in UTF-8). HTTP 415. */
export class UnsupportedMediaTypeError extends DomainError {
  constructor(message: string) {
    super('unsupported_media_type', message);
  }
}

/** One token already has as many requests in flight and waiting as it may. HTTP 429. */
export class TooManyRequestsError extends DomainError {
  constructor(inFlight: number, queued: number, retryAfterSeconds: number) {
    super(
      'too_many_requests',
      `this token already has ${inFlight} requests being handled and ${queued} waiting, the most one token may; retry later`,
      { inFlight, queued, retryAfterSeconds },
    );
  }
}
