import { describe, expect, it } from '@jest/globals';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CrossOriginWriteError, CsrfRequiredError, TooManySessionsError } from './auth.errors.js';
import type { AuthenticatedRequest } from './current-principal.decorator.js';
import { authenticateSession, isSignIn } from './session-auth.js';
import { cookieValue, csrfMatches, SessionStore } from './session-store.js';
import { TokenRegistry } from './token-registry.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const TASKS = 'tasks-token-0123456789';
const CAROL = 'carol-token-0123456789';
const grants = (aliceRole: 'viewer' | 'admin' = 'admin') => [
  { token: ALICE, subject: 'alice', workspaces: { acme: aliceRole }, global: [] },
  { token: BOB, subject: 'bob', workspaces: { acme: 'viewer' as const }, global: [] },
  { token: TASKS, subject: 'billing', workspaces: { acme: 'task-worker' as const }, global: [] },
  { token: CAROL, subject: 'carol', workspaces: { acme: 'viewer' as const }, global: [] },
];

function setup(options: { maxAgeMs?: number; maxSessions?: number; maxSessionsPerSubject?: number } = {}) {
  let now = 1_000_000;
  const registry = new TokenRegistry(grants());
  const sessions = new SessionStore(registry, { now: () => new Date(now) }, options);
  const as = (token: string) => registry.authenticate(token)!;
  return { registry, sessions, advance: (ms: number) => (now += ms), alice: as(ALICE), as };
}

type Req = IncomingMessage & AuthenticatedRequest;
function request(method: string, headers: Record<string, string>): Req {
  return { method, url: '/v1/x', headers, socket: {} } as unknown as Req;
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

  it('bounds the sessions of one subject: its next sign-in ends its own oldest', () => {
    const { sessions, alice, as } = setup({ maxSessionsPerSubject: 2 });
    const bobs = sessions.create(as(BOB));
    const [a, b, c] = [sessions.create(alice), sessions.create(alice), sessions.create(alice)];
    expect(sessions.size).toBe(3);
    expect(sessions.resolve(a.id)).toBeNull();
    expect(sessions.resolve(b.id)).not.toBeNull();
    expect(sessions.resolve(c.id)).not.toBeNull();
    expect(sessions.resolve(bobs.id)).not.toBeNull();
  });

  it('never lets one token sign another subject out, however often it signs in', () => {
    const { sessions, alice, as } = setup({ maxSessions: 10, maxSessionsPerSubject: 3 });
    const admin = sessions.create(alice);
    for (let i = 0; i < 1_000; i++) sessions.create(as(TASKS));
    expect(sessions.resolve(admin.id)?.principal.subject).toBe('alice');
    expect(sessions.size).toBe(4);
  });

  it('refuses a sign-in when the process holds its most, creating nothing and ending no one, until the oldest expires', () => {
    const { sessions, alice, as, advance } = setup({ maxSessions: 3, maxSessionsPerSubject: 2, maxAgeMs: 60_000 });
    const first = sessions.create(alice);
    advance(10_000);
    const held = [sessions.create(alice), sessions.create(as(BOB))];
    let refusal: unknown;
    try {
      sessions.create(as(CAROL));
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(TooManySessionsError);
    expect(refusal).toMatchObject({ code: 'too_many_sessions', details: { limit: 3, retryAfterSeconds: 50 } });
    expect(sessions.size).toBe(3);
    for (const { id } of [first, ...held]) expect(sessions.resolve(id)).not.toBeNull();
    // A subject at its own bound still signs in: it ends its own oldest.
    const again = sessions.create(alice);
    expect(sessions.resolve(first.id)).toBeNull();
    expect(sessions.resolve(again.id)).not.toBeNull();
    // Once the oldest has expired, there is room again.
    advance(60_000);
    expect(sessions.resolve(sessions.create(as(CAROL)).id)?.principal.subject).toBe('carol');
  });

  it('ends the session a sign-in replaces, and only that one', () => {
    const { sessions, alice, as } = setup();
    const old = sessions.create(alice);
    const other = sessions.create(alice);
    const bobs = sessions.create(as(BOB));
    const renewed = sessions.create(alice, old.id);
    expect(sessions.resolve(old.id)).toBeNull();
    expect(sessions.resolve(renewed.id)).not.toBeNull();
    expect(sessions.resolve(other.id)).not.toBeNull();
    // Another subject signing in from a browser that held bob's session ends it too.
    sessions.create(as(CAROL), bobs.id);
    expect(sessions.resolve(bobs.id)).toBeNull();
    expect(sessions.create(alice, 'no-such-session').id).not.toBe(renewed.id);
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
    const req = through(sessions, request('GET', { cookie: `__Host-flostra_session=${id}` }));
    expect(req.principal?.subject).toBe('alice');
    expect(req.session?.id).toBe(id);
  });

  it('refuses a write without the CSRF header, or with another session’s, authenticating nothing', () => {
    const { sessions, alice } = setup();
    const { id } = sessions.create(alice);
    const other = sessions.create(alice);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      for (const headers of [{}, { 'x-flostra-csrf': other.csrf }, { 'x-flostra-csrf': 'garbage' }] as Record<string, string>[]) {
        const req = through(sessions, request(method, { cookie: `__Host-flostra_session=${id}`, ...headers }));
        expect(req.principal).toBeUndefined();
        expect(req.sessionRefusal).toBeInstanceOf(CsrfRequiredError);
        expect(req.sessionRefusal?.code).toBe('csrf_required');
      }
    }
  });

  it('refuses a write from another origin even with the CSRF header; accepts its own, or none', () => {
    const { sessions, alice } = setup();
    const { id, csrf } = sessions.create(alice);
    const write = (headers: Record<string, string>) =>
      through(
        sessions,
        request('POST', { cookie: `__Host-flostra_session=${id}`, 'x-flostra-csrf': csrf, host: 'flostra.test:3000', ...headers }),
      );
    for (const origin of ['https://evil.test', 'http://flostra.test', 'http://flostra.test:3001', 'https://flostra.test:3000', 'null']) {
      const req = write({ origin });
      expect(req.principal).toBeUndefined();
      expect(req.sessionRefusal).toBeInstanceOf(CrossOriginWriteError);
      expect(req.sessionRefusal?.code).toBe('csrf_required');
    }
    expect(write({ origin: 'http://flostra.test:3000' }).principal?.subject).toBe('alice');
    expect(write({}).principal?.subject).toBe('alice');
    expect(write({ origin: 'https://flostra.test:3000', 'x-forwarded-proto': 'https' }).principal?.subject).toBe('alice');
    expect(
      write({ origin: 'https://flostra.example', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'flostra.example' }).principal?.subject,
    ).toBe('alice');
    // Reads carry no Origin check: a cross-site read cannot see the answer.
    expect(
      through(sessions, request('GET', { cookie: `__Host-flostra_session=${id}`, origin: 'https://evil.test' })).principal,
    ).toBeDefined();
  });

  it('authenticates a write with the session’s CSRF header', () => {
    const { sessions, alice } = setup();
    const { id, csrf } = sessions.create(alice);
    const req = through(sessions, request('POST', { cookie: `__Host-flostra_session=${id}`, 'x-flostra-csrf': csrf }));
    expect(req.principal?.subject).toBe('alice');
    expect(req.sessionRefusal).toBeUndefined();
  });

  it('leaves requests with an Authorization header, or without a live session, to the bearer token', () => {
    const { sessions, alice } = setup();
    const { id } = sessions.create(alice);
    const bearer = through(sessions, request('POST', { cookie: `__Host-flostra_session=${id}`, authorization: 'Bearer nope' }));
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
