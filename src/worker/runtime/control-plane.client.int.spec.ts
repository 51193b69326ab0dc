import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ControlPlaneClient } from './control-plane.client.js';
import { ClaimRefusedError, ControlPlaneUnavailableError } from './control-plane.port.js';

/** A loopback control plane that answers each path as the test says, and records what it got. */
describe('ControlPlaneClient', () => {
  let server: http.Server;
  let baseUrl: string;
  const received: { path: string; authorization?: string; body: unknown }[] = [];
  const answers = new Map<string, (res: http.ServerResponse) => void>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push({ path: req.url!, authorization: req.headers.authorization, body: JSON.parse(body) });
        const answer = [...answers].find(([suffix]) => req.url!.endsWith(suffix))?.[1];
        if (answer) answer(res);
        else res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const json = (status: number, body: unknown) => (res: http.ServerResponse) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  it('posts the heartbeat with the token and returns the parsed reply', async () => {
    answers.set('/a-1/heartbeat', json(200, { leaseExpiresAt: '2031-01-01T00:00:30.000Z', cancelRequested: true }));
    const client = new ControlPlaneClient(baseUrl, 'secret');
    try {
      await expect(client.heartbeat('e-1', 'a-1', 'w-1', 4)).resolves.toEqual({
        leaseExpiresAt: '2031-01-01T00:00:30.000Z',
        cancelRequested: true,
      });
      expect(received.at(-1)).toEqual({
        path: '/v1/executions/e-1/attempts/a-1/heartbeat',
        authorization: 'Bearer secret',
        body: { workerId: 'w-1', fencingToken: 4 },
      });
    } finally {
      client.close();
    }
  });

  it('resolves secrets as a map, keeping a name like __proto__, and refuses a reply that is not all text', async () => {
    answers.set('/a-1/secrets', (res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"values":{"__proto__":"p","A":"a"}}'),
    );
    const client = new ControlPlaneClient(baseUrl, 'secret');
    try {
      const values = await client.resolveSecrets('e-1', 'a-1', { workerId: 'w-1', fencingToken: 2, names: ['A', '__proto__'] });
      expect([...values]).toEqual([
        ['__proto__', 'p'],
        ['A', 'a'],
      ]);
      expect(received.at(-1)).toEqual({
        path: '/v1/executions/e-1/attempts/a-1/secrets',
        authorization: 'Bearer secret',
        body: { workerId: 'w-1', fencingToken: 2, names: ['A', '__proto__'] },
      });
      answers.set('/a-1/secrets', json(200, { values: { A: 1 } }));
      await expect(client.resolveSecrets('e-1', 'a-1', { workerId: 'w-1', fencingToken: 2, names: ['A'] })).rejects.toThrow(
        ControlPlaneUnavailableError,
      );
      answers.set('/a-1/secrets', json(409, { code: 'secret_not_found', detail: 'the workspace has no secret named A' }));
      await expect(client.resolveSecrets('e-1', 'a-1', { workerId: 'w-1', fencingToken: 2, names: ['A'] })).rejects.toMatchObject({
        code: 'secret_not_found',
      });
    } finally {
      client.close();
    }
  });

  describe('a won claim', () => {
    const reply = (digest: string, graph: unknown) => ({
      executionId: 'e-1',
      workspaceId: 'ws',
      attemptId: 'a-1',
      attemptNumber: 1,
      fencingToken: 3,
      leaseExpiresAt: '2031-01-01T00:00:30.000Z',
      heartbeatIntervalMs: 10_000,
      workflow: { workflowId: 'wf-1', name: 'flow', revision: 1, digest, graph },
      input: { n: 1 },
      completedNodes: {},
    });
    const graph = {
      nodes: [
        { id: 'a', type: 'noop' },
        { id: 'b', type: 'noop' },
      ],
      edges: [{ from: 'a', to: 'b' }],
    };

    it('returns the reply with its graph checked (defaults filled in), and refuses a graph that is not one', async () => {
      answers.set('/c-1/claim', json(200, reply('digest-1', graph)));
      answers.set('/c-2/claim', json(200, reply('digest-2', { nodes: 'none' })));
      const client = new ControlPlaneClient(baseUrl, 'secret');
      try {
        const claim = await client.claim('e-1', 'c-1', 'w-1');
        expect(claim).toMatchObject({ fencingToken: 3, input: { n: 1 }, workflow: { digest: 'digest-1' } });
        expect(claim.workflow.graph.nodes.map((n) => n.id)).toEqual(['a', 'b']);
        expect(claim.workflow.graph.timeouts.leaseMs).toEqual(expect.any(Number));
        await expect(client.claim('e-1', 'c-2', 'w-1')).rejects.toThrow(/nodes/);
      } finally {
        client.close();
      }
    });

    it('runs the graph checked for a digest whenever that digest comes again', async () => {
      answers.set('/c-3/claim', json(200, reply('digest-3', graph)));
      answers.set('/c-4/claim', json(200, reply('digest-3', { nodes: 'not this' })));
      const client = new ControlPlaneClient(baseUrl, 'secret');
      try {
        const first = await client.claim('e-1', 'c-3', 'w-1');
        const again = await client.claim('e-1', 'c-4', 'w-1');
        expect(again.workflow.graph).toEqual(first.workflow.graph);
      } finally {
        client.close();
      }
    });
  });

  it('turns a 409 into ClaimRefusedError with its code, and a 503 into ControlPlaneUnavailableError', async () => {
    answers.set('/a-2/claim', json(409, { code: 'stale_attempt', detail: 'someone else holds it' }));
    answers.set('/a-3/claim', json(503, { code: 'unavailable', detail: 'store down' }));
    const client = new ControlPlaneClient(baseUrl, 'secret');
    try {
      const refused = await client.claim('e-1', 'a-2', 'w-1').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ClaimRefusedError);
      expect(refused).toMatchObject({ status: 409, code: 'stale_attempt' });
      await expect(client.claim('e-1', 'a-3', 'w-1')).rejects.toBeInstanceOf(ControlPlaneUnavailableError);
    } finally {
      client.close();
    }
  });

  it('reports an answer that is not JSON (a proxy in between failing) as unavailable, not as a refusal', async () => {
    answers.set('/a-6/claim', (res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>'));
    answers.set('/a-7/claim', (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>'));
    const client = new ControlPlaneClient(baseUrl, 'secret');
    try {
      await expect(client.claim('e-1', 'a-6', 'w-1')).rejects.toThrow(/answered 502: <html>bad gateway/);
      await expect(client.claim('e-1', 'a-6', 'w-1')).rejects.toBeInstanceOf(ControlPlaneUnavailableError);
      await expect(client.claim('e-1', 'a-7', 'w-1')).rejects.toBeInstanceOf(ControlPlaneUnavailableError);
    } finally {
      client.close();
    }
  });

  it('sends a request again on a fresh connection when the kept-alive one it went out on was closed', async () => {
    // The server takes one request per connection and drops the next one unanswered, as a server
    // closing an idle connection does when a request crosses the close.
    const served = new WeakSet<object>();
    answers.set('/a-8/heartbeat', (res) => {
      if (served.has(res.socket!)) return void res.socket!.destroy();
      served.add(res.socket!);
      json(200, { leaseExpiresAt: '2031-01-01T00:00:30.000Z', cancelRequested: false })(res);
    });
    const client = new ControlPlaneClient(baseUrl, 'secret');
    try {
      const before = received.length;
      for (let i = 0; i < 3; i += 1) {
        await expect(client.heartbeat('e-1', 'a-8', 'w-1', 1)).resolves.toEqual({
          leaseExpiresAt: '2031-01-01T00:00:30.000Z',
          cancelRequested: false,
        });
      }
      // Three heartbeats answered; each after the first was sent twice (once on the dropped connection).
      expect(received.length - before).toBe(5);
    } finally {
      client.close();
    }
  });

  it('gives up on a control plane that does not answer within the timeout', async () => {
    answers.set('/a-4/heartbeat', () => undefined); // never answers
    const client = new ControlPlaneClient(baseUrl, 'secret', 50);
    try {
      await expect(client.heartbeat('e-1', 'a-4', 'w-1', 1)).rejects.toThrow(/no answer within 50 ms/);
    } finally {
      client.close();
    }
  });

  it('reports a control plane that cannot be reached as unavailable', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const client = new ControlPlaneClient(`http://127.0.0.1:${port}`, 'secret');
    try {
      await expect(client.claim('e-1', 'a-5', 'w-1')).rejects.toBeInstanceOf(ControlPlaneUnavailableError);
    } finally {
      client.close();
    }
  });
});
