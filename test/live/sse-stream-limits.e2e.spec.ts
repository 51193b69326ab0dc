import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { liveOf } from './live-scenario.js';
import { SseStream } from './sse-test-client.js';

const WORKSPACE_EVENTS = '/v1/workspaces/ws-a/events';

describe('limits on open live streams', () => {
  let t: TestApp;
  const open: SseStream[] = [];

  /** Opens a workspace stream (kept for closing after the test) and resolves once its answer's head arrived. */
  async function connect(token: string, path = WORKSPACE_EVENTS): Promise<SseStream> {
    const stream = await SseStream.open(`${t.url}${path}`, { token });
    open.push(stream);
    return stream;
  }

  async function expectRefused(stream: SseStream, scope: 'token' | 'process', limit: number): Promise<void> {
    // A stream that opened would never end by itself: the assertions below say what went wrong.
    if (stream.status === 200) stream.close();
    await stream.ended;
    expect(stream.status).toBe(429);
    expect(stream.headers['content-type']).toBe('application/problem+json');
    expect(stream.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(JSON.parse(stream.body)).toMatchObject({ code: 'too_many_streams', status: 429, scope, limit });
  }

  /** Until a new stream of `token` is let in: a closed stream's slot is freed once the server saw it go. */
  const admitted = (token: string) =>
    eventually(
      async () => {
        const stream = await connect(token);
        if (stream.status !== 200) await stream.ended;
        return stream.status === 200 && stream;
      },
      { what: 'a stream to be let in', timeoutMs: 10_000, intervalMs: 50 },
    );

  beforeAll(async () => {
    t = await startTestApp('pglite', { FLOSTRA_SSE_MAX_STREAMS_PER_TOKEN: '3', FLOSTRA_SSE_MAX_STREAMS: '5' });
  });

  afterEach(async () => {
    for (const stream of open.splice(0)) stream.close();
    await eventually(() => liveOf(t.app).streams.stats().open === 0, 'every stream of the test to be closed');
  });

  afterAll(() => t?.close());

  it('refuses the fourth stream of one token with 429 and Retry-After; another token still connects', async () => {
    const mine = [await connect(TOKENS.viewerA), await connect(TOKENS.viewerA), await connect(TOKENS.viewerA)];
    expect(mine.map((stream) => stream.status)).toEqual([200, 200, 200]);

    await expectRefused(await connect(TOKENS.viewerA), 'token', 3);
    expect((await connect(TOKENS.adminA)).status).toBe(200);

    mine[0].close();
    expect((await admitted(TOKENS.viewerA)).status).toBe(200);
  });

  it('refuses any stream once the process holds its limit, and lets the next in when one closes', async () => {
    const viewer = [await connect(TOKENS.viewerA), await connect(TOKENS.viewerA), await connect(TOKENS.viewerA)];
    const admin = [await connect(TOKENS.adminA), await connect(TOKENS.adminA)];
    expect([...viewer, ...admin].map((stream) => stream.status)).toEqual([200, 200, 200, 200, 200]);

    await expectRefused(await connect(TOKENS.operatorA), 'process', 5);

    admin[1].close();
    expect((await admitted(TOKENS.operatorA)).status).toBe(200);
  });

  it('counts no stream that was refused: authorization failures and bad cursors give their slot back', async () => {
    for (let i = 0; i < 4; i++) {
      const foreign = await connect(TOKENS.viewerA, '/v1/workspaces/ws-b/events');
      const malformed = await SseStream.open(`${t.url}${WORKSPACE_EVENTS}`, { token: TOKENS.viewerA, lastEventId: 'garbage' });
      await Promise.all([foreign.ended, malformed.ended]);
      expect([foreign.status, malformed.status]).toEqual([404, 400]);
    }
    const mine = [await connect(TOKENS.viewerA), await connect(TOKENS.viewerA), await connect(TOKENS.viewerA)];
    expect(mine.map((stream) => stream.status)).toEqual([200, 200, 200]);
  });
});
