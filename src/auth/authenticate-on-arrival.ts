import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerToken } from './auth.guard.js';
import type { AuthenticatedRequest } from './current-principal.decorator.js';
import type { TokenRegistry } from './token-registry.js';

/**
 * Express middleware, ahead of everything that reads a request body: authenticates the bearer
 * token as the request arrives and leaves the Principal on the request. It refuses nothing; the
 * body of a request without a valid token is never read (src/http/json-body.ts), and the
 * AuthGuard answers 401 for every route that is not @Public().
 */
export function authenticateOnArrival(registry: TokenRegistry) {
  return (request: IncomingMessage & AuthenticatedRequest, _response: ServerResponse, next: () => void): void => {
    const token = bearerToken(request.headers);
    const principal = token === null ? null : registry.authenticate(token);
    if (principal !== null) request.principal = principal;
    next();
  };
}
