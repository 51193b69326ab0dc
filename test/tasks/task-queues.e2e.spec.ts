import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start, view } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** prepare → charge (a task on queue `billing`) → receipt: the task's output flows on. */
const CHARGE = {
  nodes: [
    { id: 'prepare', type: 'transform', config: { expression: '{ "amount": input.amount }' } },
    { id: 'charge', type: 'task', config: { queue: 'billing', input: 'nodes.prepare' } },
    { id: 'receipt', type: 'transform', config: { expression: '{ "paid": nodes.charge.charged }' } },
  ],
  edges: [
    { from: 'prepare', to: 'charge' },
    { from: 'charge', to: 'receipt' },
  ],
};

describe('task queues on the embedded stack', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: true });
    api = client(t.url);
    await publish(api, 'charge', CHARGE);
  });
  afterAll(() => t?.close());

  const poll = (waitMs = 5_000, queue = 'billing', token: string = TOKENS.taskWorkerA) =>
    api.post(`/v1/workspaces/ws-a/task-queues/${queue}/poll`, { token, body: { workerId: 'poller-1', waitMs } });

  it('hands the task to a poller, and the execution goes on with its output once completed', async () => {
    const { executionId } = await start(api, 'charge', { input: { amount: 42 } });
    const polled = await poll();
    expect(polled.status).toBe(200);
    expect(polled.body).toMatchObject({
      executionId,
      nodeId: 'charge',
      attempt: 1,
      input: { amount: 42 },
      fencingToken: expect.any(Number),
    });

    const waiting = await eventually(
      async () => {
        const v = await view(api, executionId);
        return v.status === 'waiting' && v;
      },
      { what: 'the execution to wait for its task' },
    );
    expect(waiting.tasks).toMatchObject([{ taskId: polled.body.taskId, status: 'claimed', queue: 'billing' }]);

    const beat = await api.post(`/v1/tasks/${polled.body.taskId}/heartbeat`, {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'poller-1', fencingToken: polled.body.fencingToken, progress: { done: 0.5 } },
    });
    expect(beat.status).toBe(200);
    expect(beat.body.cancelRequested).toBe(false);

    const done = await api.post(`/v1/tasks/${polled.body.taskId}/complete`, {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'poller-1', fencingToken: polled.body.fencingToken, outcome: 'succeeded', output: { charged: 42 } },
    });
    expect(done.status).toBe(200);
    const ended = await eventually(
      async () => {
        const v = await view(api, executionId);
        return v.status === 'succeeded' && v;
      },
      { what: 'the execution to succeed' },
    );
    expect(ended.output).toEqual({ receipt: { paid: 42 } });
  });

  it('answers 204 when nothing arrives in time, and a poller of another workspace never sees ws-a tasks', async () => {
    expect((await poll(0, 'nothing-here')).status).toBe(204);
    await start(api, 'charge', { input: { amount: 1 } });
    const other = await api.post('/v1/workspaces/ws-b/task-queues/billing/poll', {
      token: TOKENS.taskWorkerB,
      body: { workerId: 'b', waitMs: 300 },
    });
    expect(other.status).toBe(204);
    const mine = await poll();
    expect(mine.status).toBe(200);
  });
});
