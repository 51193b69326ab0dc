import { Body, Controller, Delete, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import type { Request, Response } from 'express';
import { ApiRoute } from '../http/openapi/route-contract.js';
import { parseBody } from '../http/validation.js';
import { CrossOriginWriteError, UnauthenticatedError } from './auth.errors.js';
import type { Principal } from './authorization.js';
import { CurrentPrincipal, type AuthenticatedRequest } from './current-principal.decorator.js';
import { GetMeQuery } from './get-me.handler.js';
import { Public } from './public.decorator.js';
import { clientAddress, isForeignOrigin } from './request-origin.js';
import { cookieValue, SESSION_COOKIE, SESSION_STORE, type SessionStore } from './session-store.js';
import { meContract, sessionCsrfContract, signInBodySchema, signInContract, signOutContract } from './sessions.contract.js';
import { SIGN_IN_LIMITER, type SignInLimiter } from './sign-in-limiter.js';
import { TOKEN_REGISTRY, type TokenRegistry } from './token-registry.js';
import { tokenDigest } from './tokens-file.schema.js';

/**
 * Always Secure, as its `__Host-` name requires: browsers take it over https and from loopback
 * (http://127.0.0.1, http://localhost), which they count as secure, and refuse it elsewhere.
 */
function sessionCookie(value: string, maxAgeSeconds: number): string {
  return [`${SESSION_COOKIE}=${value}`, 'Path=/', `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Strict', 'Secure'].join('; ');
}

/**
 * Browser sessions (the web console's sign-in) and `GET /v1/me`. Sessions are process memory,
 * not facts of the log: no event is written, so there is no command handler to go through.
 */
@Controller('v1')
export class SessionsController {
  constructor(
    @Inject(SESSION_STORE) private readonly sessions: SessionStore,
    @Inject(TOKEN_REGISTRY) private readonly registry: TokenRegistry,
    @Inject(SIGN_IN_LIMITER) private readonly limiter: SignInLimiter,
    private readonly queries: QueryBus,
  ) {}

  @ApiRoute(signInContract)
  @Public()
  @Post('sessions')
  @HttpCode(204)
  signIn(@Body() body: unknown, @Req() request: Request, @Res({ passthrough: true }) response: Response): void {
    // Another site's page must not sign this browser in (nor, by the rotation below, out).
    if (isForeignOrigin(request)) throw new CrossOriginWriteError();
    const { token } = parseBody(signInBodySchema, body);
    this.limiter.admit(clientAddress(request), tokenDigest(token));
    const principal = this.registry.authenticate(token);
    if (principal === null) throw new UnauthenticatedError('unknown or revoked token');
    // A new id at every sign-in, and the browser's previous session ends.
    const { id } = this.sessions.create(principal, cookieValue(request.headers.cookie, SESSION_COOKIE));
    response.setHeader('Cache-Control', 'no-store');
    response.setHeader('Set-Cookie', sessionCookie(id, Math.floor(this.sessions.maxAgeMs / 1000)));
  }

  @ApiRoute(sessionCsrfContract)
  @Get('sessions/csrf')
  csrf(@Req() request: AuthenticatedRequest, @Res({ passthrough: true }) response: Response): { csrf: string } {
    if (request.session === undefined) throw new UnauthenticatedError('no browser session: sign in with POST /v1/sessions');
    response.setHeader('Cache-Control', 'no-store');
    return { csrf: request.session.csrf };
  }

  @ApiRoute(signOutContract)
  @Delete('sessions')
  @HttpCode(204)
  signOut(@Req() request: AuthenticatedRequest, @Res({ passthrough: true }) response: Response): void {
    if (request.session === undefined) throw new UnauthenticatedError('no browser session: sign in with POST /v1/sessions');
    this.sessions.end(request.session.id);
    response.setHeader('Set-Cookie', sessionCookie('', 0));
  }

  @ApiRoute(meContract)
  @Get('me')
  me(@CurrentPrincipal() principal: Principal, @Req() request: AuthenticatedRequest, @Res({ passthrough: true }) response: Response) {
    response.setHeader('Cache-Control', 'no-store');
    return this.queries.execute(new GetMeQuery(principal, request.session === undefined ? 'token' : 'session'));
  }
}
