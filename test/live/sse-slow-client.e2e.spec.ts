import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { historyOf, liveOf } from './live-scenario.js';
import { SseStream } from './sse-test-client.js';

// Large events fill the kernel's socket buffers (megabytes on loopback) quickly.
const EXECUTIONS = 40;
const PAD = 'x'.repeat(200 * 1024);

describe.each(STORE_KINDS)('a client that never reads, on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
    liveOf(t.app).tune({ maxBufferedBytes: 512 * 1024, maxBufferedEvents: 50 });
  });
  afterAll(() => t?.close());

  it('is disconnected rather than skipped, and resumes to the complete history', async () => {
    const live = liveOf(t.app);
    const slowBefore = live.streams.stats().closed.slow_client;
    const stream = await SseStream.open(`${t.url}/v1/workspaces/ws-a/events`, { token: TOKENS.viewerA, paused: true });
    const executionIds: string[] = [];
    for (let i = 0; i < EXECUTIONS; i++) executionIds.push((await start(api, 'chain', { input: { i, pad: PAD } })).executionId);
    const histories = await Promise.all(executionIds.map((id) => historyOf(api, id)));
    const expected = histories
      .flat()
      .map((e) => e.position)
      .sort();
    // Nothing is ever read from the slow socket until the server has given up on it.
    await eventually(() => live.streams.stats().closed.slow_client > slowBefore, 'the server to close the slow client');
    stream.resume();
    await stream.ended;
    const firstPart = stream.ids;
    expect(firstPart.length).toBeLessThan(expected.length);
    expect(firstPart).toEqual(expected.slice(0, firstPart.length));

    const resumed = await SseStream.open(`${t.url}/v1/workspaces/ws-a/events`, { token: TOKENS.viewerA, lastEventId: stream.lastEventId });
    await resumed.until((s) => s.ids.includes(expected.at(-1)!));
    resumed.close();
    expect([...firstPart, ...resumed.ids]).toEqual(expected);
  });
});
