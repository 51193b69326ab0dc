import type { IncomingMessage } from 'node:http';
import type { AuthenticatedRequest } from '../auth/current-principal.decorator.js';

/** What the HTTP shell adds to Node's request (Express adds `originalUrl` and `body`). */
export interface HttpRequest extends AuthenticatedRequest {
  originalUrl?: string;
  body?: unknown;
  /** From a sane `X-Request-Id` header, or generated; echoed in the response and in logs. */
  requestId?: string;
}

export type ShellRequest = IncomingMessage & HttpRequest;
export type NextFunction = (error?: unknown) => void;

/** The request path without its query string: what logs record (queries may carry cursors). */
export function pathOf(request: ShellRequest): string {
  return (request.originalUrl ?? request.url ?? '').split('?')[0];
}
