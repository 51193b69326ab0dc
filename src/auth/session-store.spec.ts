import { describe, expect, it } from '@jest/globals';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CsrfRequiredError } from './auth.errors.js';
import type { AuthenticatedRequest } from './current-principal.decorator.js';
import { authenticateSession, isSignIn } from './session-auth.js';
import { cookieValue, csrfMatches, SessionStore } from './session-store.js';
import { TokenRegistry } from './token-registry.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const grants = (aliceRole: 'viewer' | 'admin' = 'admin') => [
  { token: ALICE, subject: 'alice', workspaces: { acme: aliceRole }, global: [] },
  { token: BOB, subject: 'bob', workspaces: { acme: 'viewer' as const }, global: [] },
];

function setup(options: { maxAgeMs?: number; maxSessions?: number } = {}) {
  let now = 1_000_000;
  const registry = new TokenRegistry(grants());
  const sessions = new SessionStore(registry, { ...options, now: () => now });
  return { registry, sessions, advance: (ms: number) => (now += ms), alice: registry.authenticate(ALICE)! };
}

type Req = IncomingMessage & AuthenticatedRequest;
function request(method: string, headers: Record<string, string>): Req {
  return { method, url: '/v1/x', headers } as unknown as Req;
}
function through(sessions: SessionStore, req: Req): Req {
  let called = 0;
  authenticateSession(sessions)(req, {} as ServerResponse, () => called++);
  expect(called).toBe(1);
  return req;
}

describe('the session store', () => {
  it('resolves a session to its token’s grant as it is now', () => {
    const { registry, sessions, alice } = setup();
    const { id, csrf } = sessions.create(alice);
    expect(sessions.resolve(id)).toEqual({ principal: expect.objectContaining({ subject: 'alice' }), csrf });
    registry.replace(grants('viewer'));
    expect(sessions.resolve(id)?.principal.workspaces.get('acme')).toBe('viewer');
  });

  it('ends every session of a revoked token, for good', () => {
    const { registry, sessions, alice } = setup();
    const first = sessions.create(alice);
    const bobs = sessions.create(registry.authenticate(BOB)!);
    registry.replace(grants().filter((g) => g.subject !== 'alice'));
    expect(sessions.size).toBe(1);
    expect(sessions.resolve(first.id)).toBeNull();
    expect(sessions.resolve(bobs.id)).not.toBeNull();
    // The token comes back: the old session stays ended.
    registry.replace(grants());
    expect(sessions.resolve(first.id)).toBeNull();
  });

  it('expires a session after its lifetime', () => {
    const { sessions, alice, advance } = setup({ maxAgeMs: 1000 });
    const { id } = sessions.create(alice);
    advance(999);
    expect(sessions.resolve(id)).not.toBeNull();
    advance(1);
    expect(sessions.resolve(id)).toBeNull();
  });

  it('signs out, and knows no made-up id', () => {
    const { sessions, alice } = setup();
    const { id } = sessions.create(alice);
    expect(sessions.resolve(`${id}x`)).toBeNull();
    expect(sessions.end(id)).toBe(true);
    expect(sessions.resolve(id)).toBeNull();
    expect(sessions.end(id)).toBe(false);
  });

  it('holds a bounded number of sessions, signing the oldest out', () => {
    const { sessions, alice } = setup({ maxSessions: 2 });
    const [a, b, c] = [sessions.create(alice), sessions.create(alice), sessions.create(alice)];
    expect(sessions.size).toBe(2);
    expect(sessions.resolve(a.id)).toBeNull();
    expect(sessions.resolve(b.id)).not.toBeNull();
    expect(sessions.resolve(c.id)).not.toBeNull();
  });

  it('gives every session its own id and CSRF value, and matches the value exactly', () => {
    const { sessions, alice } = setup();
    const one = sessions.create(alice);
    const two = sessions.create(alice);
    expect(new Set([one.id, one.csrf, two.id, two.csrf]).size).toBe(4);
    const resolved = sessions.resolve(one.id)!;
    expect(csrfMatches(resolved, one.csrf)).toBe(true);
    for (const wrong of [two.csrf, `${one.csrf}x`, one.csrf.slice(1), '', undefined, [one.csrf]])
      expect(csrfMatches(resolved, wrong)).toBe(false);
  });
});

describe('cookies', () => {
  it('finds a cookie by its exact name', () => {
    expect(cookieValue('a=1; flostra_session=abc; b=2', 'flostra_session')).toBe('abc');
    expect(cookieValue('xflostra_session=abc', 'flostra_session')).toBeNull();
    expect(cookieValue('flostra_session=', 'flostra_session')).toBeNull();
    expect(cookieValue(undefined, 'flostra_session')).toBeNull();
  });
});

describe('authenticating by session', () => {
  it('authenticates reads with the cookie alone', () => {
    const { sessions, alice } = setup();
    const { id } = sessions.create(alice);
    const req = through(sessions, request('GET', { cookie: `flostra_session=${id}` }));
    expect(req.principal?.subject).toBe('alice');
    expect(req.session?.id).toBe(id);
  });

  it('refuses a write without the CSRF header, or with another session’s, authenticating nothing', () => {
    const { sessions, alice } = setup();
    const { id } = sessions.create(alice);
    const other = sessions.create(alice);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      for (const headers of [{}, { 'x-flostra-csrf': other.csrf }, { 'x-flostra-csrf': 'garbage' }] as Record<string, string>[]) {
        const req = through(sessions, request(method, { cookie: `flostra_session=${id}`, ...headers }));
        expect(req.principal).toBeUndefined();
        expect(req.sessionRefusal).toBeInstanceOf(CsrfRequiredError);
        expect(req.sessionRefusal?.code).toBe('csrf_required');
      }
    }
  });

  it('authenticates a write with the session’s CSRF header', () => {
    const { sessions, alice } = setup();
    const { id, csrf } = sessions.create(alice);
    const req = through(sessions, request('POST', { cookie: `flostra_session=${id}`, 'x-flostra-csrf': csrf }));
    expect(req.principal?.subject).toBe('alice');
    expect(req.sessionRefusal).toBeUndefined();
  });

  it('leaves requests with an Authorization header, or without a live session, to the bearer token', () => {
    const { sessions, alice } = setup();
    const { id } = sessions.create(alice);
    const bearer = through(sessions, request('POST', { cookie: `flostra_session=${id}`, authorization: 'Bearer nope' }));
    expect(bearer.principal).toBeUndefined();
    expect(bearer.sessionRefusal).toBeUndefined();
    const unknown = through(sessions, request('POST', { cookie: 'flostra_session=unknown' }));
    expect(unknown.principal).toBeUndefined();
    expect(unknown.sessionRefusal).toBeUndefined();
  });

  it('recognizes the sign-in request only', () => {
    expect(isSignIn(request('POST', {}) as never)).toBe(false);
    expect(isSignIn({ method: 'POST', url: '/v1/sessions?x=1', headers: {} } as never)).toBe(true);
    expect(isSignIn({ method: 'DELETE', url: '/v1/sessions', headers: {} } as never)).toBe(false);
    expect(isSignIn({ method: 'POST', url: '/v1/sessions/csrf', headers: {} } as never)).toBe(false);
  });
});
