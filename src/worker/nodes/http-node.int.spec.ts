import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
import { runDag } from '../dag/dag-runner.js';
import { NodeError } from '../dag/node-error.js';
import { graphOf, recordingReport } from '../../../test/support/worker/dag/scripted-nodes.js';
import { createEgressGuard } from '../egress/egress-guard.js';
import { json, startLoopbackServer, type LoopbackServer } from '../../../test/support/worker/egress/loopback-server.js';
import { createHttpNode } from './http-node.js';
import { createNodeRegistry } from './node-registry.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';

type HttpSpec = Partial<NodeOfType<'http'>['config']> & { url: string };

const httpNode = (config: HttpSpec, id = 'H') =>
  graphOf([{ id, type: 'http', config: { method: 'GET', ...config } }]).nodes[0] as NodeOfType<'http'>;

// A loopback server, reached through a guard whose allowlist permits exactly that address.
describe('http node', () => {
  let server: LoopbackServer;
  const http = createHttpNode(createEgressGuard({ allow: { cidrs: ['127.0.0.1/32'] } }));
  const url = (path: string) => `${server.origin}${path}`;
  const failure = (config: HttpSpec, signal?: AbortSignal) => http(httpNode(config), contextFor('H', { signal })).catch((e: unknown) => e);

  beforeAll(async () => {
    server = await startLoopbackServer('127.0.0.1');
    server.route('/orders', json(201, { id: 'o-1' }, { etag: '"v1"', 'set-cookie': 'session=secret' }));
    server.route('/text', (_request, response) => void response.writeHead(200, { 'content-type': 'text/plain' }).end('plain'));
    server.route('/hang', () => {});
    for (const status of [404, 429, 503]) server.route(`/status/${status}`, json(status, { error: status }));
  });
  afterAll(async () => {
    await server.close();
  });

  describe('when the server answers 2xx', () => {
    it('sends the stable Idempotency-Key and the JSON body, and outputs status, kept headers and body', async () => {
      const node = httpNode({
        method: 'POST',
        url: url('/orders'),
        headers: { 'Idempotency-Key': 'forged', 'X-Trace': 't-1' },
        body: { sku: 'a', qty: 2 },
      });

      const output = await http(node, contextFor('H'));

      const received = server.requests.at(-1)!;
      expect(received).toMatchObject({ method: 'POST', path: '/orders', body: '{"sku":"a","qty":2}' });
      expect(received.headers['idempotency-key']).toBe('exec-1:H');
      expect(received.headers['x-trace']).toBe('t-1');
      expect(received.headers['content-type']).toBe('application/json');
      expect(output).toEqual({
        status: 201,
        headers: { 'content-type': 'application/json', etag: '"v1"' },
        body: { id: 'o-1' },
      });
    });

    it('outputs a non-JSON body as text', async () => {
      expect(await http(httpNode({ url: url('/text') }), contextFor('H'))).toMatchObject({ body: 'plain' });
    });
  });

  describe('when it fails', () => {
    it.each([
      [503, true],
      [429, true],
      [404, false],
    ])('turns %i into http_<status>, retryable: %s', async (status, retryable) => {
      const error = await failure({ url: url(`/status/${status}`) });

      expect(error).toBeInstanceOf(NodeError);
      expect(error).toMatchObject({ code: `http_${status}`, retryable });
    });

    it('times out as a retryable http_timeout', async () => {
      expect(await failure({ url: url('/hang'), timeoutMs: 50 })).toMatchObject({ code: 'http_timeout', retryable: true });
    });

    it('is refused by the default guard as egress_denied, not retryable', async () => {
      const guarded = createHttpNode(createEgressGuard());
      const error = await guarded(httpNode({ url: url('/orders') }), contextFor('H')).catch((e: unknown) => e);

      expect(error).toMatchObject({ code: 'egress_denied', retryable: false });
    });

    it('gives up when the run is aborted, with the abort itself', async () => {
      const controller = new AbortController();
      const pending = failure({ url: url('/hang') }, controller.signal);
      const reason = new Error('lease lost');
      controller.abort(reason);

      expect(await pending).toBe(reason);
    });
  });

  describe('when run by the DAG runner with a retry policy', () => {
    it('retries a 503 with the same Idempotency-Key and succeeds', async () => {
      let calls = 0;
      server.route('/flaky', (request, response) => {
        calls++;
        json(calls === 1 ? 503 : 200, { calls })(request, response);
      });
      const graph = graphOf([
        {
          id: 'charge',
          type: 'http',
          config: { method: 'POST', url: url('/flaky'), body: {} },
          retry: { maxAttempts: 3, initialIntervalMs: 10, maxIntervalMs: 10 },
        },
      ]);
      const registry = createNodeRegistry({ egress: createEgressGuard({ allow: { cidrs: ['127.0.0.1/32'] } }) });
      const { events, report } = recordingReport();

      const outcome = await runDag({
        graph,
        input: {},
        executionId: 'exec-9',
        workspaceId: 'ws-a',
        attemptId: 'attempt-1',
        signal: new AbortController().signal,
        executeNode: registry.execute,
        report,
        sleep: async () => {},
      });

      expect(outcome).toMatchObject({ outcome: 'succeeded', output: { charge: { status: 200, body: { calls: 2 } } } });
      const keys = server.requests.filter((r) => r.path === '/flaky').map((r) => r.headers['idempotency-key']);
      expect(keys).toEqual(['exec-9:charge', 'exec-9:charge']);
      expect(events.map((e) => e.kind)).toEqual(['node_started', 'node_succeeded']);
    });
  });
});
