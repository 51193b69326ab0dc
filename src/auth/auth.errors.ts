import { DomainError } from '../core/errors.js';

/** No bearer token, or one the TokenRegistry does not know (any more). HTTP 401. */
export class UnauthenticatedError extends DomainError {
  constructor(message = 'a valid bearer token is required') {
    super('unauthenticated', message);
  }
}

/**
 * A write made with a browser session cookie without the session's `X-Flostra-CSRF` header (or
 * with another value). HTTP 403; nothing is read or written.
 */
export class CsrfRequiredError extends DomainError {
  constructor() {
    super('csrf_required', 'a write with a session cookie needs the X-Flostra-CSRF header of that session (GET /v1/sessions/csrf)');
  }
}

/**
 * A write made with a browser session cookie, or a sign-in, whose `Origin` names another site
 * than this server. HTTP 403, the code of a missing CSRF header: both are the same guard.
 */
export class CrossOriginWriteError extends DomainError {
  constructor() {
    super('csrf_required', "a write with a session cookie, or a sign-in, must come from this server's own origin (the Origin header)");
  }
}

/**
 * A sign-in beyond the rate of one client address or of one token (FLOSTRA_SIGN_IN_PER_MINUTE_PER_*).
 * HTTP 429 with `Retry-After`; no session is created.
 */
export class TooManySignInsError extends DomainError {
  constructor(scope: 'address' | 'token', limit: number, retryAfterSeconds: number) {
    super(
      'too_many_sign_ins',
      scope === 'address'
        ? `more than ${limit} sign-ins a minute from this client address; retry after ${retryAfterSeconds} s`
        : `more than ${limit} sign-ins a minute with this token; retry after ${retryAfterSeconds} s`,
      { scope, limit, retryAfterSeconds },
    );
  }
}

/**
 * A sign-in of a subject while the api process holds FLOSTRA_SESSIONS_MAX sessions: refused
 * rather than signing another subject out. HTTP 429 with `Retry-After` (when the oldest expires).
 */
export class TooManySessionsError extends DomainError {
  constructor(limit: number, retryAfterSeconds: number) {
    super(
      'too_many_sessions',
      `this server already holds ${limit} browser sessions, the most it keeps; sign out elsewhere or retry after ${retryAfterSeconds} s`,
      { limit, retryAfterSeconds },
    );
  }
}

/** A known principal without the role the action needs. HTTP 403. */
export class ForbiddenError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('forbidden', message, details);
  }
}
