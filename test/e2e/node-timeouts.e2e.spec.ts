import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start, view } from '../support/scenario.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** A node-level timeoutMs is enforced by the worker's DAG runner, whatever the node's type. */
describe('node timeouts, with a real worker', () => {
  let t: TestApp;
  let api: ApiClient;
  const server = new BarrierServer();

  const ended = (executionId: string) =>
    eventually(
      async () => {
        const execution = await view(api, executionId);
        return !['queued', 'running'].includes(execution.status as string) && execution;
      },
      { what: `execution ${executionId} to end`, timeoutMs: 60_000 },
    );

  beforeAll(async () => {
    await server.start();
    t = await startTestApp('pglite', {}, { worker: { egressAllow: ['127.0.0.1/32'] } });
    api = client(t.url);
    // A delay waits outside the attempt (a durable timer), so a node that runs long is a loop.
    const longDelay = {
      nodes: [
        { id: 'wait', type: 'code', config: { language: 'javascript', source: 'while (true) {}', timeoutMs: 10_000 }, timeoutMs: 200 },
        { id: 'after', type: 'noop' },
      ],
      edges: [{ from: 'wait', to: 'after' }],
    };
    await publish(api, 'long-delay', longDelay);
    // The request's own timeout (config.timeoutMs, 30 s by default) is not what ends it.
    const slowHttp = {
      nodes: [
        {
          id: 'call',
          type: 'http',
          config: { method: 'GET', url: `${server.url}/hold/slow` },
          timeoutMs: 300,
          retry: { maxAttempts: 2, initialIntervalMs: 0 },
        },
      ],
      edges: [],
    };
    await publish(api, 'slow-http', slowHttp);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await server.stop();
  });

  it('fails a node running longer than its timeoutMs with node_timeout', async () => {
    const { executionId } = await start(api, 'long-delay');
    const execution = await ended(executionId);
    expect(execution.status).toBe('failed');
    expect(execution.error).toEqual({ code: 'node_timeout', message: 'node wait did not finish within its timeoutMs of 200 ms' });
  });

  it('fails an http call to a server that does not answer with node_timeout, after the tries its retry policy allows', async () => {
    const { executionId } = await start(api, 'slow-http');
    const execution = await ended(executionId);
    expect(execution.status).toBe('failed');
    expect(execution.error).toEqual({ code: 'node_timeout', message: 'node call did not finish within its timeoutMs of 300 ms' });
    // node_timeout is retryable: both tries reached the server.
    expect(server.hits.get('slow')).toBe(2);
  });
});
