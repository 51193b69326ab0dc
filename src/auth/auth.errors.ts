import { DomainError } from '../core/errors.js';

/** No bearer token, or one the TokenRegistry does not know (any more). HTTP 401. */
export class UnauthenticatedError extends DomainError {
  constructor(message = 'a valid bearer token is required') {
    super('unauthenticated', message);
  }
}

/** A known principal without the role the action needs. HTTP 403. */
export class ForbiddenError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('forbidden', message, details);
  }
}
