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

/** A known principal without the role the action needs. HTTP 403. */
export class ForbiddenError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('forbidden', message, details);
  }
}
