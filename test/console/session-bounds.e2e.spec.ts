import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { client, type ApiClient } from '../support/http-client.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * What one token or one address may take of the browser sessions of an api process (promise 13),
 * over HTTP: a token that signs in again and again ends only its own subject's oldest sessions,
 * never an admin's; a process that holds its most refuses a new subject instead of signing anyone
 * out; and sign-ins are limited per token and per client address, answering 429 with
 * `Retry-After` and creating nothing. The rate limits refill on the app's clock, moved by the test.
 */

type Answer = Awaited<ReturnType<ApiClient['post']>>;

const cookieOf = (res: Answer): string => (res.headers.get('set-cookie') ?? '').split(';')[0];

async function signIn(api: ApiClient, token: string, headers: Record<string, string> = {}): Promise<Answer> {
  return api.post('/v1/sessions', { body: { token }, headers });
}

async function signedIn(api: ApiClient, token: string): Promise<string> {
  const res = await signIn(api, token);
  expect(res.status).toBe(204);
  return cookieOf(res);
}

const me = async (api: ApiClient, cookie: string) => (await api.get('/v1/me', { headers: { cookie } })).status;

describe('one token signing in ten times as often as the process holds sessions (sign-ins not limited)', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {
      FLOSTRA_SESSIONS_MAX: '100',
      FLOSTRA_SIGN_IN_PER_MINUTE_PER_TOKEN: '1000000',
      FLOSTRA_SIGN_IN_PER_MINUTE_PER_ADDRESS: '1000000',
    });
    api = client(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('signs out none of the admin’s sessions, only its own oldest', async () => {
    const admin = await signedIn(api, TOKENS.adminA);
    const flood: string[] = [];
    // A task worker's token, sixteen sign-ins at a time.
    while (flood.length < 1_000) flood.push(...(await Promise.all(Array.from({ length: 16 }, () => signedIn(api, TOKENS.taskWorkerA)))));
    expect(await me(api, admin)).toBe(200);
    // Its subject holds FLOSTRA_SESSIONS_PER_SUBJECT (20): the newest.
    const live = await Promise.all(flood.map((cookie) => me(api, cookie)));
    expect(live.filter((status) => status === 200)).toHaveLength(20);
    expect(live.slice(-20)).toEqual(Array(20).fill(200));
  });
});

describe('a process with small bounds: 4 sessions, 2 per subject, 3 sign-ins a minute per token and 6 per address', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {
      FLOSTRA_SESSIONS_MAX: '4',
      FLOSTRA_SESSIONS_PER_SUBJECT: '2',
      FLOSTRA_SIGN_IN_PER_MINUTE_PER_TOKEN: '3',
      FLOSTRA_SIGN_IN_PER_MINUTE_PER_ADDRESS: '6',
    });
    api = client(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });
  // Every test starts with full buckets: a minute passes on the app's clock.
  beforeEach(() => t.clock.advance(60_000));

  it('answers a token’s fourth sign-in in a minute 429 with Retry-After, creating nothing; it passes once a token refilled', async () => {
    await signedIn(api, TOKENS.adminA);
    const kept = [await signedIn(api, TOKENS.adminA), await signedIn(api, TOKENS.adminA)];
    const refused = await signIn(api, TOKENS.adminA);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('20');
    expect(refused.body).toMatchObject({ code: 'too_many_sign_ins', scope: 'token', limit: 3 });
    expect(refused.headers.get('set-cookie')).toBeNull();
    // A session created would have ended the subject's oldest (2 per subject): both still stand.
    for (const cookie of kept) expect(await me(api, cookie)).toBe(200);
    t.clock.advance(20_000);
    expect((await signIn(api, TOKENS.adminA)).status).toBe(204);
  });

  it('answers an address’s seventh sign-in in a minute 429, whatever the token, unknown ones counted', async () => {
    for (let i = 0; i < 6; i++) expect((await signIn(api, `nobody-knows-this-token-${i}`)).status).toBe(401);
    const refused = await signIn(api, TOKENS.editorA);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'too_many_sign_ins', scope: 'address', limit: 6 });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('set-cookie')).toBeNull();
  });

  it('refuses a new subject once the process holds its most, signing no one out; a subject at its own bound still signs in', async () => {
    const held = [await signedIn(api, TOKENS.adminA), await signedIn(api, TOKENS.adminA)];
    held.push(await signedIn(api, TOKENS.editorA), await signedIn(api, TOKENS.operatorA));
    const refused = await signIn(api, TOKENS.viewerA);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'too_many_sessions', limit: 4 });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('set-cookie')).toBeNull();
    for (const cookie of held) expect(await me(api, cookie)).toBe(200);
    // Signing out frees a place.
    const [csrf] = [(await api.get('/v1/sessions/csrf', { headers: { cookie: held[3] } })).body.csrf as string];
    expect((await api.request('DELETE', '/v1/sessions', { headers: { cookie: held[3], 'x-flostra-csrf': csrf } })).status).toBe(204);
    expect((await signIn(api, TOKENS.viewerA)).status).toBe(204);
  });
});
