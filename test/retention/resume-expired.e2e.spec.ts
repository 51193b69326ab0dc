import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomIds } from '../../src/core/ids.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import { RetentionHorizon } from '../../src/retention/application/retention-horizon.js';
import { sweepRetention } from '../../src/retention/application/retention-sweep.js';
import { readModelCandidates } from '../../src/retention/infrastructure/read-model-candidates.js';
import { SseStream } from '../live/sse-test-client.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start } from '../support/scenario.js';
import { ALL_STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const DAY = 24 * 60 * 60 * 1000;

/** The answer of a stream refused before any stream byte: its status and problem. */
async function refusal(stream: SseStream) {
  if (stream.status === 200) stream.close();
  await stream.ended;
  expect(stream.headers['content-type']).toBe('application/problem+json');
  expect(stream.messages).toEqual([]);
  return { status: stream.status, problem: JSON.parse(stream.body) as Record<string, unknown> };
}

describe.each(ALL_STORE_KINDS)('resuming a live stream across retention on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    // The app's own sweep runs too (its watchdog role, at start): on the real clock nothing has expired.
    t = await startTestApp(kind, { FLOSTRA_RETENTION_DAYS: '30' });
    api = client(t.url);
    await publish(api, 'chain');
  });
  afterAll(() => t?.close());

  it('answers 410 resume_expired for a position older than the horizon, and resumes a kept execution as before', async () => {
    const ended = await start(api, 'chain');
    const kept = await start(api, 'chain');
    expect((await api.post(`/v1/executions/${ended.executionId}/cancel`, { token: TOKENS.operatorA, body: {} })).status).toBe(202);
    await t.waitForProjections();
    const endedHistory = (await api.get(`/v1/executions/${ended.executionId}/history`, { token: TOKENS.viewerA })).body.events;
    const keptHistory = (await api.get(`/v1/executions/${kept.executionId}/history`, { token: TOKENS.viewerA })).body.events;
    const oldPosition: string = endedHistory[0].position;

    // 31 days on, with 30 days of retention: the cancelled execution goes, the queued one stays.
    const now = new Date(Date.now() + 31 * DAY);
    const report = await sweepRetention({
      store: t.store,
      executions: new ExecutionStreams(t.store, { now: () => now }, randomIds),
      candidates: readModelCandidates(t.readModelSql),
      horizon: new RetentionHorizon(t.store),
      clock: { now: () => now },
      ids: randomIds,
      days: 30,
    });
    expect(report.deleted).toBe(1);
    await t.waitForProjections();

    const byHeader = await refusal(
      await SseStream.open(`${t.url}/v1/executions/${ended.executionId}/events`, { token: TOKENS.viewerA, lastEventId: oldPosition }),
    );
    expect(byHeader.status).toBe(410);
    expect(byHeader.problem).toMatchObject({
      status: 410,
      code: 'resume_expired',
      detail: expect.stringContaining('retention horizon'),
      horizon: endedHistory.at(-1).position,
    });
    const workspace = await refusal(
      await SseStream.open(`${t.url}/v1/workspaces/ws-a/events?lastEventId=${encodeURIComponent(oldPosition)}`, { token: TOKENS.viewerA }),
    );
    expect(workspace).toMatchObject({ status: 410, problem: { code: 'resume_expired' } });

    // Without a position the deleted execution is simply not there.
    expect((await api.get(`/v1/executions/${ended.executionId}`, { token: TOKENS.viewerA })).status).toBe(404);
    const fresh = await refusal(await SseStream.open(`${t.url}/v1/executions/${ended.executionId}/events`, { token: TOKENS.viewerA }));
    expect(fresh.status).toBe(404);

    // The kept execution's events are all there: resuming from its first is no gap, whatever the horizon.
    const resumed = await SseStream.open(`${t.url}/v1/executions/${kept.executionId}/events`, {
      token: TOKENS.viewerA,
      lastEventId: keptHistory[0].position,
    });
    await resumed.until((s) => s.messages.length >= keptHistory.length - 1);
    resumed.close();
    expect(resumed.status).toBe(200);
    expect(resumed.ids).toEqual(keptHistory.slice(1).map((event: { position: string }) => event.position));
  });
});
