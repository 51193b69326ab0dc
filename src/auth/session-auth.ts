import type { IncomingMessage, ServerResponse } from 'node:http';
import { CrossOriginWriteError, CsrfRequiredError } from './auth.errors.js';
import type { AuthenticatedRequest } from './current-principal.decorator.js';
import { isForeignOrigin } from './request-origin.js';
import { cookieValue, CSRF_HEADER, csrfMatches, SESSION_COOKIE, type SessionStore } from './session-store.js';

/** The sign-in (`POST /v1/sessions`): the one request whose body is read without a token, since it carries one. */
export function isSignIn(request: IncomingMessage & { originalUrl?: string }): boolean {
  return request.method === 'POST' && (request.originalUrl ?? request.url ?? '').split('?')[0] === '/v1/sessions';
}

/** Methods that change something: with a session cookie they need the session's CSRF header. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Express middleware, right after authenticateOnArrival and ahead of the body reader: a request
 * without an Authorization header that carries a live session cookie is authenticated as the
 * session's token is now. A write (any method but GET, HEAD, OPTIONS) must also carry the
 * session's CSRF value in `X-Flostra-CSRF`, and an `Origin`, when it has one, of this server;
 * otherwise the request stays unauthenticated, its body is never read, and the AuthGuard answers
 * `403 csrf_required`. An Authorization header
 * always wins: a bearer request never looks at cookies, so the token API is unchanged.
 */
export function authenticateSession(sessions: SessionStore) {
  return (request: IncomingMessage & AuthenticatedRequest, _response: ServerResponse, next: () => void): void => {
    if (request.principal !== undefined || request.headers.authorization !== undefined) return next();
    const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
    const session = id === null ? null : sessions.resolve(id);
    if (id === null || session === null) return next();
    if (!SAFE_METHODS.has(request.method ?? 'GET')) {
      if (isForeignOrigin(request)) request.sessionRefusal = new CrossOriginWriteError();
      else if (!csrfMatches(session, request.headers[CSRF_HEADER])) request.sessionRefusal = new CsrfRequiredError();
      if (request.sessionRefusal !== undefined) return next();
    }
    request.principal = session.principal;
    request.session = { id, csrf: session.csrf };
    next();
  };
}
