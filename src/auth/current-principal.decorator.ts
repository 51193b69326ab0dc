import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { DomainError } from '../core/errors.js';
import { UnauthenticatedError } from './auth.errors.js';
import type { Principal } from './principal.js';

/** What the AuthGuard leaves on the request for handlers and later middleware. */
export interface AuthenticatedRequest {
  principal?: Principal;
  /** Set when the principal came from a browser session cookie (src/auth/session-auth.ts). */
  session?: { id: string; csrf: string };
  /** Why a request with a live session cookie was not authenticated (a write without its CSRF header). */
  sessionRefusal?: DomainError;
}

/**
 * The Principal the AuthGuard authenticated. Workspace authorization is the handler's job,
 * from the resource it loads (`requireWorkspaceRole`).
 */
export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<AuthenticatedRequest>().principal;
  // Only reachable on a @Public() route, where asking for a principal is a wiring mistake.
  if (principal === undefined) throw new UnauthenticatedError();
  return principal;
});
