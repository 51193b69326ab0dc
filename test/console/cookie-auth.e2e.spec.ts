import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { TOKEN_REGISTRY, type TokenRegistry } from '../../src/auth/token-registry.js';
import type { TokenEntry } from '../../src/auth/tokens-file.schema.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Browser sessions over plain HTTP, no browser: the `__Host-` cookie and its rotation at sign-in,
 * the CSRF header and the Origin check on every write, the roles of the token behind the session,
 * sign-out, and revocation of the token ending both the session and its open SSE stream. The
 * bearer-token API does not change. (Bounds of sign-ins and sessions: session-bounds.e2e.spec.ts.)
 */

const SESSION_TOKEN = 'cookie-suite-operator-token';
const SESSION_VIEWER = 'cookie-suite-viewer-token-01';
const BASE: TokenEntry[] = [
  { token: TOKENS.adminA, subject: 'alice', workspaces: { 'ws-a': 'admin' }, global: [] },
  { token: TOKENS.viewerA, subject: 'victor', workspaces: { 'ws-a': 'viewer' }, global: [] },
  { token: TOKENS.worker, subject: 'worker', workspaces: {}, global: ['worker'] },
];
const WITH_SESSIONS: TokenEntry[] = [
  ...BASE,
  { token: SESSION_TOKEN, subject: 'olga', workspaces: { 'ws-a': 'operator' }, global: [] },
  { token: SESSION_VIEWER, subject: 'vera', workspaces: { 'ws-a': 'viewer' }, global: [] },
];

let t: TestApp;
let api: ApiClient;
let registry: TokenRegistry;

interface Session {
  cookie: string;
  setCookie: string;
  csrf: string;
}

async function signIn(token: string, headers: Record<string, string> = {}): Promise<Session> {
  const res = await api.post('/v1/sessions', { body: { token }, headers });
  expect(res.status).toBe(204);
  const setCookie = res.headers.get('set-cookie') ?? '';
  const cookie = setCookie.split(';')[0];
  const csrf = await api.get('/v1/sessions/csrf', { headers: { cookie } });
  expect(csrf.status).toBe(200);
  return { cookie, setCookie, csrf: csrf.body.csrf as string };
}

async function executionCount(): Promise<number> {
  const res = await api.get('/v1/workspaces/ws-a/executions?limit=200', { token: TOKENS.adminA });
  expect(res.status).toBe(200);
  return res.body.executions.length as number;
}

const startPath = '/v1/workspaces/ws-a/workflows/cookie-flow/executions';

beforeAll(async () => {
  // This suite signs in often; the rate of sign-ins has its own suite.
  t = await startTestApp('pglite', { FLOSTRA_SIGN_IN_PER_MINUTE_PER_TOKEN: '1000', FLOSTRA_SIGN_IN_PER_MINUTE_PER_ADDRESS: '1000' });
  api = client(t.url);
  registry = t.app.get<TokenRegistry>(TOKEN_REGISTRY, { strict: false });
  registry.replace(WITH_SESSIONS);
  await publish(api, 'cookie-flow');
});
afterAll(async () => {
  await t?.close();
});

describe('browser sessions', () => {
  it('sign in answers 204 with a __Host- cookie: HttpOnly, SameSite=Strict, Secure, Path=/ and no Domain', async () => {
    for (const headers of [{}, { 'x-forwarded-proto': 'https' }] as Record<string, string>[]) {
      const session = await signIn(SESSION_TOKEN, headers);
      expect(session.setCookie).toMatch(/^__Host-flostra_session=[A-Za-z0-9_-]{43}; /);
      expect(session.setCookie.split('; ').slice(1).sort()).toEqual(['HttpOnly', 'Max-Age=43200', 'Path=/', 'SameSite=Strict', 'Secure']);
    }
  });

  it('a sign-in ends the session of the cookie it came with, and gives a new one', async () => {
    const before = await signIn(SESSION_TOKEN);
    const other = await signIn(SESSION_TOKEN);
    const after = await signIn(SESSION_VIEWER, { cookie: before.cookie });
    expect(after.cookie).not.toBe(before.cookie);
    expect((await api.get('/v1/me', { headers: { cookie: before.cookie } })).status).toBe(401);
    expect((await api.get('/v1/me', { headers: { cookie: after.cookie } })).body).toMatchObject({ subject: 'vera', via: 'session' });
    // Another browser's session of the same token stays.
    expect((await api.get('/v1/me', { headers: { cookie: other.cookie } })).status).toBe(200);
  });

  it('a cookie write from another origin is 403 even with the CSRF header, and writes nothing; its own origin passes', async () => {
    const session = await signIn(SESSION_TOKEN);
    const before = await executionCount();
    const own = new URL(t.url).origin;
    for (const origin of ['https://evil.example', 'null', own.replace('http:', 'https:')]) {
      const headers = { cookie: session.cookie, 'x-flostra-csrf': session.csrf, origin };
      const res = await api.post(startPath, { body: { input: {} }, headers });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'csrf_required', detail: expect.stringContaining('Origin') });
      expect((await api.request('DELETE', '/v1/sessions', { headers })).status).toBe(403);
    }
    expect(await executionCount()).toBe(before);
    const ok = await api.post(startPath, {
      body: { input: {} },
      headers: { cookie: session.cookie, 'x-flostra-csrf': session.csrf, origin: own },
    });
    expect(ok.status).toBe(201);
    expect(await executionCount()).toBe(before + 1);
  });

  it('a sign-in from another origin is 403 and sets no cookie', async () => {
    const res = await api.post('/v1/sessions', { body: { token: SESSION_TOKEN }, headers: { origin: 'https://evil.example' } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('csrf_required');
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('refuses an unknown token and a malformed body, setting no cookie', async () => {
    const unknown = await api.post('/v1/sessions', { body: { token: 'not-a-token-of-anyone' } });
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('set-cookie')).toBeNull();
    const malformed = await api.post('/v1/sessions', { body: { token: SESSION_TOKEN, extra: 1 } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('validation_failed');
  });

  it('GET /v1/me tells the subject and roles, by token and by session alike', async () => {
    const session = await signIn(SESSION_TOKEN);
    const bySession = await api.get('/v1/me', { headers: { cookie: session.cookie } });
    expect(bySession.body).toEqual({
      subject: 'olga',
      workspaces: [{ workspaceId: 'ws-a', role: 'operator' }],
      global: [],
      via: 'session',
    });
    const byToken = await api.get('/v1/me', { token: TOKENS.adminA });
    expect(byToken.body).toMatchObject({ subject: 'alice', via: 'token' });
    expect((await api.get('/v1/me')).status).toBe(401);
  });

  it('a write with the cookie but without the right CSRF header is 403 csrf_required and writes nothing', async () => {
    const session = await signIn(SESSION_TOKEN);
    const other = await signIn(SESSION_TOKEN);
    const before = await executionCount();
    for (const headers of [{}, { 'x-flostra-csrf': 'forged' }, { 'x-flostra-csrf': other.csrf }] as Record<string, string>[]) {
      const res = await api.post(startPath, { body: { input: {} }, headers: { cookie: session.cookie, ...headers } });
      expect(res.status).toBe(403);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.code).toBe('csrf_required');
    }
    expect(await executionCount()).toBe(before);
    const ok = await api.post(startPath, { body: { input: {} }, headers: { cookie: session.cookie, 'x-flostra-csrf': session.csrf } });
    expect(ok.status).toBe(201);
    expect(await executionCount()).toBe(before + 1);
  });

  it('a session has its token’s roles: a viewer’s write is forbidden even with the CSRF header', async () => {
    const viewer = await signIn(SESSION_VIEWER);
    const res = await api.post(startPath, { body: { input: {} }, headers: { cookie: viewer.cookie, 'x-flostra-csrf': viewer.csrf } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
  });

  it('the bearer API ignores cookies: no CSRF header needed, and a bad token is 401 whatever the cookie', async () => {
    const session = await signIn(SESSION_TOKEN);
    const bearer = await api.post(startPath, { token: TOKENS.adminA, body: { input: {} }, headers: { cookie: session.cookie } });
    expect(bearer.status).toBe(201);
    const badBearer = await api.get('/v1/me', { token: 'nobody-knows-this-token', headers: { cookie: session.cookie } });
    expect(badBearer.status).toBe(401);
    expect((await api.get('/v1/sessions/csrf', { token: TOKENS.adminA })).status).toBe(401);
  });

  it('sign-out needs the CSRF header, then ends the session', async () => {
    const session = await signIn(SESSION_TOKEN);
    const forged = await api.request('DELETE', '/v1/sessions', { headers: { cookie: session.cookie } });
    expect(forged.status).toBe(403);
    expect((await api.get('/v1/me', { headers: { cookie: session.cookie } })).status).toBe(200);
    const out = await api.request('DELETE', '/v1/sessions', { headers: { cookie: session.cookie, 'x-flostra-csrf': session.csrf } });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await api.get('/v1/me', { headers: { cookie: session.cookie } })).status).toBe(401);
  });

  it('revoking the token ends the session and its open event stream', async () => {
    const session = await signIn(SESSION_TOKEN);
    const started = await api.post(startPath, { token: TOKENS.adminA, body: { input: {} } });
    const stream = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(`${t.url}/v1/executions/${started.body.executionId}/events`, {
        headers: { cookie: session.cookie, accept: 'text/event-stream' },
        agent: false,
      });
      req.on('response', resolve).on('error', reject).end();
    });
    expect(stream.statusCode).toBe(200);
    let text = '';
    let ended = false;
    stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    stream.on('close', () => (ended = true));
    await eventually(() => text.includes('event: ExecutionStarted'), 'the stream to deliver the first event');
    registry.replace(BASE);
    await eventually(() => ended, 'the stream to end');
    expect(text).toContain(': stream ended: grant revoked');
    expect((await api.get('/v1/me', { headers: { cookie: session.cookie } })).status).toBe(401);
    // The token coming back does not bring the session back.
    registry.replace(WITH_SESSIONS);
    expect((await api.get('/v1/me', { headers: { cookie: session.cookie } })).status).toBe(401);
  });
});

describe('the list of workflows', () => {
  it('lists a workspace’s workflows with their latest revision, to its viewers only', async () => {
    await api.put('/v1/workspaces/ws-a/workflows/cookie-flow', {
      token: TOKENS.adminA,
      body: { nodes: [{ id: 'only', type: 'noop' }], edges: [] },
    });
    const res = await api.get('/v1/workspaces/ws-a/workflows', { token: TOKENS.viewerA });
    expect(res.status).toBe(200);
    expect(res.body.items).toEqual([
      expect.objectContaining({ name: 'cookie-flow', revision: 2, publishedBy: 'alice', digest: expect.stringMatching(/^[0-9a-f]{64}$/) }),
    ]);
    expect((await api.get('/v1/workspaces/ws-b/workflows', { token: TOKENS.viewerA })).status).toBe(404);
  });
});

describe('the console’s files', () => {
  it('serves index.html at /console and its deep links, with a strict CSP; assets are immutable', async () => {
    for (const path of ['/console', '/console/', '/console/executions/abc?x=1']) {
      const res = await fetch(t.url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(res.headers.get('content-security-policy')).not.toContain('unsafe');
      const html = await res.text();
      expect(html).toContain('<div id="root">');
      expect(html).not.toMatch(/https?:\/\//);
    }
    const html = await (await fetch(`${t.url}/console`)).text();
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    const script = await fetch(t.url + asset!);
    expect(script.status).toBe(200);
    expect(script.headers.get('cache-control')).toContain('immutable');
    expect(script.headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${t.url}/console/assets/missing.js`)).status).toBe(404);
  });
});
