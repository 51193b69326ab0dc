import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start, view } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const ONE_DAY_MS = 86_400_000;
const ONE_HOUR_MS = 3_600_000;

/** before → pause (a delay) → after. */
const delayed = (config: Record<string, unknown>) => ({
  nodes: [
    { id: 'before', type: 'noop' },
    { id: 'pause', type: 'delay', config },
    { id: 'after', type: 'transform', config: { expression: '{ "done": true }' } },
  ],
  edges: [
    { from: 'before', to: 'pause' },
    { from: 'pause', to: 'after' },
  ],
});

/** gate (a wait_signal "go") → use (its payload flows on). */
const SIGNALLED = {
  nodes: [
    { id: 'gate', type: 'wait_signal', config: { name: 'go' } },
    { id: 'use', type: 'transform', config: { expression: '{ "got": nodes.gate.value }' } },
  ],
  edges: [{ from: 'gate', to: 'use' }],
};

/** A short delay first, so a signal sent right after the start arrives before the node is reached. */
const SIGNALLED_LATER = {
  nodes: [
    { id: 'first', type: 'delay', config: { ms: 300 } },
    { id: 'gate', type: 'wait_signal', config: { name: 'go' } },
    { id: 'use', type: 'transform', config: { expression: '{ "got": nodes.gate.value }' } },
  ],
  edges: [
    { from: 'first', to: 'gate' },
    { from: 'gate', to: 'use' },
  ],
};

describe('durable timers and signals on the embedded stack', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: true });
    api = client(t.url);
    await publish(api, 'short-delay', delayed({ ms: 200 }));
    await publish(api, 'one-day', delayed({ ms: ONE_DAY_MS }));
    await publish(api, 'one-hour', delayed({ ms: ONE_HOUR_MS }));
    await publish(api, 'signalled', SIGNALLED);
    await publish(api, 'signalled-later', SIGNALLED_LATER);
  });
  afterAll(() => t?.close());

  const types = async (executionId: string): Promise<string[]> => {
    const res = await api.get(`/v1/executions/${executionId}/history?limit=500`, { token: TOKENS.viewerA });
    expect(res.status).toBe(200);
    return (res.body.events as { type: string }[]).map((e) => e.type);
  };
  const succeeded = (executionId: string) =>
    eventually(
      async () => {
        const v = await view(api, executionId);
        return v.status === 'succeeded' && v;
      },
      { what: `execution ${executionId} to succeed` },
    );
  const waitingAt = (executionId: string, nodeId: string) =>
    eventually(
      async () => {
        const v = await view(api, executionId);
        return (
          v.status === 'waiting' &&
          v.nodes.some((n: { nodeId: string; status: string }) => n.nodeId === nodeId && n.status === 'waiting') &&
          v
        );
      },
      { what: `execution ${executionId} to wait at ${nodeId}` },
    );
  const signal = (executionId: string, name: string, body: object = {}, key?: string) =>
    api.post(`/v1/executions/${executionId}/signals/${name}`, {
      token: TOKENS.operatorA,
      body,
      headers: key === undefined ? {} : { 'idempotency-key': key },
    });

  it('a delay suspends the attempt on a timer, and a resume attempt goes on once it fired', async () => {
    const { executionId } = await start(api, 'short-delay');
    const done = await succeeded(executionId);
    expect(done.output).toEqual({ after: { done: true } });
    expect(done.attempts.map((a: { reason: string; status: string }) => [a.reason, a.status])).toEqual([
      ['start', 'suspended'],
      ['resume', 'succeeded'],
    ]);
    expect(done.timers).toMatchObject([{ nodeId: 'pause', purpose: 'delay', status: 'fired' }]);
    const history = await types(executionId);
    expect(history.filter((type) => type.startsWith('Timer'))).toEqual(['TimerScheduled', 'TimerFired']);
    expect(history.indexOf('AttemptSuspended')).toBeLessThan(history.indexOf('TimerFired'));
  });

  it('an hour-long delay holds no attempt; when its time comes (a moved clock) it fires once and records how late', async () => {
    const { executionId } = await start(api, 'one-hour');
    const waiting = await waitingAt(executionId, 'pause');
    expect(waiting.attempts.at(-1).status).toBe('suspended');
    t.clock.advance(ONE_HOUR_MS + 5_000);
    const done = await succeeded(executionId);
    expect(done.timers).toHaveLength(1);
    expect(done.timers[0].lateByMs).toBeGreaterThanOrEqual(5_000);
    expect((await types(executionId)).filter((type) => type === 'TimerFired')).toHaveLength(1);
  });

  it('a cancel during a one-day delay ends the execution at once: no attempt has to notice it', async () => {
    const { executionId } = await start(api, 'one-day');
    await waitingAt(executionId, 'pause');
    const cancelled = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: {} });
    expect(cancelled.status).toBe(202);
    expect(cancelled.body.status).toBe('cancelled');
    const v = await view(api, executionId);
    expect(v.timers).toMatchObject([{ status: 'cancelled' }]);
    expect(v.nodes.find((n: { nodeId: string }) => n.nodeId === 'pause').status).toBe('cancelled');
    expect((await types(executionId)).slice(-3)).toEqual(['CancelRequested', 'TimerCancelled', 'ExecutionCancelled']);
  });

  it('a signal over HTTP is taken by the waiting node, whose output is its payload; the key makes a retry safe', async () => {
    const { executionId } = await start(api, 'signalled');
    await waitingAt(executionId, 'gate');
    const sent = await signal(executionId, 'go', { payload: { value: 7 } }, 'send-1');
    expect(sent.status).toBe(202);
    expect(sent.body.signalId).toEqual(expect.any(String));
    const again = await signal(executionId, 'go', { payload: { value: 7 } }, 'send-1');
    expect(again.status).toBe(202);
    expect(again.body.signalId).toBe(sent.body.signalId);
    const done = await succeeded(executionId);
    expect(done.output).toEqual({ use: { got: 7 } });
    expect(done.signals).toMatchObject([{ signalId: sent.body.signalId, name: 'go', deliveredTo: 'gate', sentBy: 'oscar' }]);
    const history = await types(executionId);
    expect(history.filter((type) => type.startsWith('Signal'))).toEqual(['SignalAwaited', 'SignalReceived', 'SignalDelivered']);

    const ended = await signal(executionId, 'go', { payload: { value: 8 } });
    expect(ended.status).toBe(409);
    expect(ended.body.code).toBe('invalid_state');
  });

  it('a signal sent before the node is reached is kept and delivered when it is', async () => {
    const { executionId } = await start(api, 'signalled-later');
    const sent = await signal(executionId, 'go', { payload: { value: 'early' } });
    expect(sent.status).toBe(202);
    const done = await succeeded(executionId);
    expect(done.output).toEqual({ use: { got: 'early' } });
    expect(done.signals).toMatchObject([{ signalId: sent.body.signalId, deliveredTo: 'gate' }]);
  });

  it('answers 404 for an unknown execution, 400 for a bad name, 403 for a viewer, and writes nothing', async () => {
    const unknown = await signal('6f1c2a52-0000-4000-8000-000000000000', 'go');
    expect(unknown.status).toBe(404);
    const { executionId } = await start(api, 'signalled');
    const badName = await signal(executionId, 'not a name!');
    expect(badName.status).toBe(400);
    const viewer = await api.post(`/v1/executions/${executionId}/signals/go`, { token: TOKENS.viewerA, body: {} });
    expect(viewer.status).toBe(403);
    expect((await types(executionId)).filter((type) => type === 'SignalReceived')).toEqual([]);
    await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: {} });
  });
});
