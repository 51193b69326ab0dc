import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { IncomingHttpHeaders } from 'node:http';
import type { AuthenticatedRequest } from './current-principal.decorator.js';
import { IS_PUBLIC } from './public.decorator.js';
import { UnauthenticatedError } from './auth.errors.js';
import { TOKEN_REGISTRY, TokenRegistry } from './token-registry.js';

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(headers: IncomingHttpHeaders): string | null {
  const match = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(headers.authorization ?? '');
  return match === null ? null : match[1];
}

/**
 * Global guard: authenticates every route not marked @Public() and attaches the Principal.
 * It only authenticates; which workspace a request may touch is decided by the handler from
 * the resource it loads (promise 10, docs/architecture.md), never here from the URL.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(TOKEN_REGISTRY) private readonly registry: TokenRegistry,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic === true) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest & { headers: IncomingHttpHeaders }>();
    // A browser session (src/auth/session-auth.ts): authenticated, or refused, before the body was read.
    if (request.sessionRefusal !== undefined) throw request.sessionRefusal;
    if (request.session !== undefined && request.principal !== undefined) return true;
    const token = bearerToken(request.headers);
    if (token === null) throw new UnauthenticatedError('missing bearer token (Authorization: Bearer <token>) or browser session');
    const principal = this.registry.authenticate(token);
    if (principal === null) throw new UnauthenticatedError('unknown or revoked bearer token');
    request.principal = principal;
    return true;
  }
}
