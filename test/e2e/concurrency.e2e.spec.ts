import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { client, type ApiClient } from '../support/http-client.js';
import { claim, publish, start } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** Concurrent duplicates resolve through the stream's expected revision: one fact, same answers. */
describe.each(STORE_KINDS)('concurrent duplicate commands on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
  });
  afterAll(() => t?.close());

  const eventsOf = async (executionId: string) =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events as { type: string }[];

  it('appends exactly one RedriveRequested for 20 concurrent redrives with one key, and answers all 20 identically', async () => {
    const { executionId } = await start(api, 'chain');
    await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA });
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.post(`/v1/executions/${executionId}/redrive`, { token: TOKENS.operatorA, headers: { 'idempotency-key': 'one-key' }, body: {} }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(202));
    const bodies = new Set(responses.map((r) => JSON.stringify(r.body)));
    expect(bodies.size).toBe(1);
    const events = await eventsOf(executionId);
    expect(events.filter((e) => e.type === 'RedriveRequested')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'AttemptScheduled')).toHaveLength(2);
  });

  it('starts exactly one execution for 20 concurrent starts with one key', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.post('/v1/workspaces/ws-a/workflows/chain/executions', {
          token: TOKENS.operatorA,
          headers: { 'idempotency-key': `start-${kind}` },
          body: { input: { same: true } },
        }),
      ),
    );
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
    expect(responses.filter((r) => r.status === 200)).toHaveLength(19);
    expect(new Set(responses.map((r) => JSON.stringify(r.body))).size).toBe(1);
    const events = await eventsOf(responses[0].body.executionId);
    expect(events.filter((e) => e.type === 'ExecutionStarted')).toHaveLength(1);
  });

  it('gives an attempt to exactly one of 10 workers claiming at once', async () => {
    const { executionId, attemptId } = await start(api, 'chain');
    const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => claim(api, executionId, attemptId, `w-${i}`)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
    expect(responses.filter((r) => r.status === 409).every((r) => r.body.code === 'stale_attempt')).toBe(true);
    const events = await eventsOf(executionId);
    expect(events.filter((e) => e.type === 'AttemptClaimed')).toHaveLength(1);
  });

  it('lets a cancel and a completion race without losing either fact or breaking the state machine', async () => {
    const { executionId, attemptId } = await start(api, 'chain');
    const claimed = await claim(api, executionId, attemptId);
    const [cancel, complete] = await Promise.all([
      api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA }),
      api.post(`/v1/executions/${executionId}/attempts/${attemptId}/complete`, {
        token: TOKENS.worker,
        body: { workerId: 'worker-1', fencingToken: claimed.body.fencingToken, outcome: 'succeeded' },
      }),
    ]);
    expect(complete.status).toBe(200);
    const final = (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
    expect(final.status).toBe('succeeded');
    // Either the cancel landed first (202, then the worker still finished), or after (409).
    expect([202, 409]).toContain(cancel.status);
  });
});
