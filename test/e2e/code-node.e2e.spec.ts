import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start, view } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** Retries that would run the node and the execution again, were the failure retryable. */
const RETRIED = { maxAttempts: 3, initialIntervalMs: 0 };

/** A workflow of one code node `c`; a short lease, so that a cancel reaches the worker within a second. */
const codeWorkflow = (source: string, limits: { timeoutMs?: number; memoryMb?: number } = {}) => ({
  nodes: [{ id: 'c', type: 'code', config: { language: 'javascript', source, ...limits }, retry: RETRIED }],
  edges: [],
  retry: RETRIED,
  timeouts: { leaseMs: 3_000 },
});

/** A worker (in this process, beside the api) runs code nodes whose code attacks the worker. */
describe('code nodes run by a worker', () => {
  let t: TestApp;
  let api: ApiClient;

  const ended = (executionId: string) =>
    eventually(
      async () => {
        const execution = await view(api, executionId);
        return !['queued', 'running'].includes(execution.status as string) && execution;
      },
      { what: `execution ${executionId} to end`, timeoutMs: 60_000 },
    );

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: { concurrency: 4 } });
    api = client(t.url);
    await publish(
      api,
      'order-total',
      codeWorkflow('return { total: input.input.items.reduce((sum, item) => sum + item.qty * item.price, 0) }'),
    );
    await publish(api, 'loop', codeWorkflow('for (;;) {}', { timeoutMs: 300 }));
    await publish(api, 'long-loop', codeWorkflow('while (true) {}', { timeoutMs: 10_000 }));
    await publish(api, 'bomb', codeWorkflow('const all = []; for (;;) all.push(new Array(1e4).fill(all.length))', { memoryMb: 8 }));
    await publish(
      api,
      'escape',
      codeWorkflow(`return {
        require: typeof require, process: typeof process, fetch: typeof fetch,
        globalProcess: typeof globalThis.process,
        viaEval: eval('typeof process'), viaFunction: Function('return typeof require')(),
        viaImport: typeof import('node:fs').then,
      }`),
    );
  }, 120_000);
  afterAll(() => t?.close());

  it('computes its output from the execution input', async () => {
    const { executionId } = await start(api, 'order-total', {
      input: {
        items: [
          { qty: 2, price: 3 },
          { qty: 1, price: 4 },
        ],
      },
    });
    const execution = await ended(executionId);
    expect(execution.status).toBe('succeeded');
    expect(execution.output).toEqual({ c: { total: 10 } });
  });

  it.each([
    ['an infinite loop', 'loop', 'code_timeout', 'limit of 300 ms'],
    ['an allocation bomb', 'bomb', 'code_memory_exceeded', 'limit of 8 MB'],
  ])('fails %s (workflow %s) with %s, not retried', async (_what, name, code, limit) => {
    const { executionId } = await start(api, name);
    const execution = await ended(executionId);
    expect(execution.status).toBe('failed');
    expect(execution.error).toEqual({ code, message: expect.stringContaining(limit), retryable: false });
    expect(execution.attempts).toHaveLength(1);
  });

  it('finds nothing of the host to escape to', async () => {
    const { executionId } = await start(api, 'escape');
    const execution = await ended(executionId);
    expect(execution.status).toBe('succeeded');
    expect(execution.output).toEqual({
      c: {
        require: 'undefined',
        process: 'undefined',
        fetch: 'undefined',
        globalProcess: 'undefined',
        viaEval: 'undefined',
        viaFunction: 'undefined',
        viaImport: 'function',
      },
    });
  });

  it('runs another execution to success while one loops on the same worker, and the loop ends when cancelled', async () => {
    const looping = await start(api, 'long-loop');
    await eventually(async () => (await view(api, looping.executionId)).status === 'running', 'the loop to run');

    const other = await start(api, 'order-total', { input: { items: [{ qty: 5, price: 5 }] } });
    const done = await ended(other.executionId);
    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ c: { total: 25 } });
    // Its 10 s limit is not reached: the other execution was served beside it, not after it.
    expect((await view(api, looping.executionId)).status).toBe('running');

    const cancel = await api.post(`/v1/executions/${looping.executionId}/cancel`, { token: TOKENS.operatorA, body: {} });
    expect(cancel.status).toBe(202);
    expect((await ended(looping.executionId)).status).toBe('cancelled');
  });

  it('refuses at publish a source that does not compile, naming the node', async () => {
    const res = await api.put('/v1/workspaces/ws-a/workflows/broken', {
      token: TOKENS.adminA,
      body: codeWorkflow('return input.a +'),
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'validation_failed',
      issues: [{ path: 'nodes[0].config.source', message: expect.stringContaining('does not compile: SyntaxError') }],
    });
  });

  it('checks at publish by syntax alone: ten sources that would loop if run are published, and the next publish is checked', async () => {
    // Each closes its function early; evaluated, it would loop on the api's compile thread.
    const looping = '}); for (;;) {} (function () {';
    const nodes = Array.from({ length: 10 }, (_, i) => ({
      id: `c${i}`,
      type: 'code',
      config: { language: 'javascript', source: looping },
    }));
    const published = await api.put('/v1/workspaces/ws-a/workflows/compiled-only', { token: TOKENS.adminA, body: { nodes, edges: [] } });
    expect(published.status).toBe(201);

    const next = await api.put('/v1/workspaces/ws-a/workflows/broken-after', { token: TOKENS.adminA, body: codeWorkflow('return (') });
    expect(next.status).toBe(400);
    expect(next.body).toMatchObject({ code: 'validation_failed' });
  });
});

describe('code sources checked at publish within FLOSTRA_CODE_CHECK_TIMEOUT_MS', () => {
  let t: TestApp;
  let api: ApiClient;

  // A real time limit is what is under test: 1 ms is less than the compile thread takes to start.
  beforeAll(async () => {
    t = await startTestApp('pglite', { FLOSTRA_CODE_CHECK_TIMEOUT_MS: '1' });
    api = client(t.url);
  }, 120_000);
  afterAll(() => t?.close());

  it('refuses a publish whose checks outlast it with 503 unavailable, and publishes nothing', async () => {
    const res = await api.put('/v1/workspaces/ws-a/workflows/unchecked', { token: TOKENS.adminA, body: codeWorkflow('return 1') });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.body).toMatchObject({ code: 'unavailable', detail: expect.stringContaining('FLOSTRA_CODE_CHECK_TIMEOUT_MS'), timeoutMs: 1 });
    expect((await api.get('/v1/workspaces/ws-a/workflows/unchecked', { token: TOKENS.adminA })).status).toBe(404);
  });
});
