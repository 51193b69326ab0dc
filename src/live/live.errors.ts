import { DomainError } from '../core/errors.js';

/**
 * A resume position of this store's form that lies beyond the end of its log: no reader was
 * ever handed it (it comes from another deployment, a store that was reset, or was made up).
 * Resuming after it would deliver nothing until the log got there, then skip everything before
 * it. HTTP 409.
 */
export class PositionAheadError extends DomainError {
  constructor(source: string, position: string) {
    super(
      'position_ahead',
      `${source} ${position} is beyond the end of the event log: this store never handed it out; reconnect without it to start over`,
    );
  }
}

/**
 * A resume position older than the retention horizon: events after it may have been deleted
 * (docs/operations.md, Retention), so resuming there could skip them silently. HTTP 410.
 */
export class ResumeExpiredError extends DomainError {
  constructor(source: string, position: string, horizon: string) {
    super(
      'resume_expired',
      `${source} ${position} is older than the retention horizon ${horizon}: events after it may have been deleted; read the current state and reconnect without it`,
      { horizon },
    );
  }
}

/** Seconds a client refused for too many open streams is told to wait (`Retry-After`). */
export const STREAM_LIMIT_RETRY_AFTER_SECONDS = 5;

/** One token, or the whole process, already holds as many open SSE streams as allowed. HTTP 429. */
export class TooManyStreamsError extends DomainError {
  constructor(scope: 'token' | 'process', limit: number) {
    super(
      'too_many_streams',
      scope === 'token'
        ? `this token already holds ${limit} open live streams, the most one token may; close one first`
        : `this server already holds ${limit} open live streams, the most it serves at once; retry later`,
      { scope, limit, retryAfterSeconds: STREAM_LIMIT_RETRY_AFTER_SECONDS },
    );
  }
}
