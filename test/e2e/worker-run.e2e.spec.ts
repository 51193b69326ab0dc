import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually, sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { ALL_STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { BarrierServer } from '../support/barrier-server.js';

/** The same workflows run, cancel and redrive alike on every event store, with a real worker. */
describe.each(ALL_STORE_KINDS)('executions run by a worker on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  // A request held open is the long node (a delay waits outside the attempt, on a durable timer).
  const barrier = new BarrierServer();

  beforeAll(async () => {
    await barrier.start();
    t = await startTestApp(kind, {}, { worker: { egressAllow: ['127.0.0.1/32'] } });
    api = client(t.url);
    const diamond = {
      nodes: [
        { id: 'a', type: 'noop' },
        { id: 'b', type: 'transform', config: { expression: '{ "doubled": $.input.n * 2 }' } },
        { id: 'c', type: 'noop' },
        { id: 'd', type: 'transform', config: { expression: '$.nodes.b.doubled + 1' } },
      ],
      edges: [
        { from: 'a', to: 'b' },
        { from: 'a', to: 'c' },
        { from: 'b', to: 'd' },
        { from: 'c', to: 'd' },
      ],
    };
    expect((await api.put('/v1/workspaces/ws-a/workflows/diamond', { token: TOKENS.adminA, body: diamond })).status).toBe(201);
    const slow = {
      nodes: [{ id: 'nap', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/nap` } }],
      edges: [],
      timeouts: { leaseMs: 3_000 },
    };
    expect((await api.put('/v1/workspaces/ws-a/workflows/slow', { token: TOKENS.adminA, body: slow })).status).toBe(201);
    // Heartbeats every 2 s.
    const quick = { nodes: [{ id: 'only', type: 'noop' }], edges: [], timeouts: { leaseMs: 6_000 } };
    expect((await api.put('/v1/workspaces/ws-a/workflows/quick', { token: TOKENS.adminA, body: quick })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await barrier.stop();
  });

  const start = async (name: string, input: object = {}) => {
    const res = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: { input } });
    expect(res.status).toBe(201);
    return res.body.executionId as string;
  };
  const until = (executionId: string, statuses: string[], what = statuses.join('|')) =>
    eventually(
      async () => {
        const v = (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
        return statuses.includes(v.status) ? v : false;
      },
      { what: `${executionId} to be ${what}`, timeoutMs: 60_000 },
    );

  it('runs executions to completion with the joined output', async () => {
    const ids = await Promise.all([1, 2, 3].map((n) => start('diamond', { n })));
    for (const [index, id] of ids.entries()) {
      const done = await until(id, ['succeeded', 'failed']);
      expect(done.status).toBe('succeeded');
      expect(done.output).toEqual({ d: (index + 1) * 2 + 1 });
    }
  });

  it('sends no heartbeat for an attempt once the control plane has recorded its end', async () => {
    const heartbeats: string[] = [];
    const server = t.app.getHttpServer();
    const record = (request: { url?: string }) => {
      if (request.url?.endsWith('/heartbeat')) heartbeats.push(request.url);
    };
    server.on('request', record);
    try {
      const ids = await Promise.all([1, 2, 3].map(() => start('quick')));
      for (const id of ids) expect((await until(id, ['succeeded', 'failed'])).status).toBe('succeeded');
      // Past the time of each attempt's first heartbeat (2 s after its claim), and then some.
      await sleep(3_000);
      expect(heartbeats.filter((url) => ids.some((id) => url.includes(id)))).toEqual([]);
    } finally {
      server.off('request', record);
    }
  });

  it('cancels a running execution and redrives it', async () => {
    const id = await start('slow');
    await eventually(async () => {
      const v = (await api.get(`/v1/executions/${id}`, { token: TOKENS.viewerA })).body;
      return v.nodes.some((n: { nodeId: string; status: string }) => n.nodeId === 'nap' && n.status === 'running');
    }, 'the long node to run');
    expect((await api.post(`/v1/executions/${id}/cancel`, { token: TOKENS.operatorA })).status).toBe(202);
    expect((await until(id, ['cancelled'])).status).toBe('cancelled');
    const redrive = await api.post(`/v1/executions/${id}/redrive`, {
      token: TOKENS.operatorA,
      headers: { 'idempotency-key': `again-${kind}` },
    });
    expect(redrive.status).toBe(202);
    const running = await until(id, ['running'], 'running again');
    expect(running.attempts.map((a: { status: string }) => a.status)).toEqual(['cancelled', 'running']);
    expect((await api.post(`/v1/executions/${id}/cancel`, { token: TOKENS.operatorA })).status).toBe(202);
    expect((await until(id, ['cancelled'])).status).toBe('cancelled');
  });
});
