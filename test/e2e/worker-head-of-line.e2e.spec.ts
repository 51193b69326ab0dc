import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { BarrierServer } from '../support/barrier-server.js';

/**
 * A long attempt must not stall the attempts dispatched behind it on the same partition of the
 * dispatch topic: the worker runs them side by side and only the commit waits.
 */
describe('a worker with a long attempt running', () => {
  let t: TestApp;
  let api: ApiClient;
  // A request held open is the long node (a delay waits outside the attempt, on a durable timer).
  const barrier = new BarrierServer();

  beforeAll(async () => {
    await barrier.start();
    t = await startTestApp('pglite', {}, { worker: { concurrency: 4, egressAllow: ['127.0.0.1/32'] } });
    api = client(t.url);
    const long = { nodes: [{ id: 'nap', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/nap` } }], edges: [] };
    const short = { nodes: [{ id: 'only', type: 'noop' }], edges: [] };
    expect((await api.put('/v1/workspaces/ws-a/workflows/long', { token: TOKENS.adminA, body: long })).status).toBe(201);
    expect((await api.put('/v1/workspaces/ws-a/workflows/short', { token: TOKENS.adminA, body: short })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await barrier.stop();
  });

  const start = async (name: string) => {
    const res = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: {} });
    expect(res.status).toBe(201);
    return res.body.executionId as string;
  };
  const status = async (executionId: string) =>
    (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body.status as string;

  it('finishes every execution dispatched after it, whichever partition they share with it', async () => {
    const longId = await start('long');
    await eventually(async () => (await status(longId)) === 'running', 'the long attempt to run');
    // 40 executions over 12 partitions: without side-by-side attempts, some would share the
    // long one's partition and wait ten minutes behind it.
    const shortIds: string[] = [];
    for (let n = 0; n < 40; n++) shortIds.push(await start('short'));
    for (const id of shortIds)
      await eventually(async () => (await status(id)) === 'succeeded', { what: `${id} to succeed`, timeoutMs: 60_000 });
    expect(await status(longId)).toBe('running');
    expect((await api.post(`/v1/executions/${longId}/cancel`, { token: TOKENS.operatorA })).status).toBe(202);
    await eventually(async () => (await status(longId)) === 'cancelled', 'the long execution to be cancelled');
  });
});
