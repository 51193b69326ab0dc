import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { historyOf } from '../live/live-scenario.js';
import { eventually, sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { start, view } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** Retries that would run the node and the execution again, were the failure retryable. */
const RETRIED = { maxAttempts: 3, initialIntervalMs: 0 };

/**
 * A worker (in this process, beside the api) runs transforms that would stall or kill the process
 * that evaluates them; the sandbox keeps them in their own processes.
 */
interface Runaway {
  runaway: string;
  expression: string;
  input: Record<string, unknown>;
  env: Record<string, string>;
  code: string;
  limit: string;
  stillRunningAfterHealth: boolean;
}

describe.each<Runaway>([
  {
    runaway: 'a catastrophic regular expression',
    // (a+)+$ against 30 a's and a ! backtracks 2^30 times, inside one native step of JSONata.
    expression: '$match(input.s, /(a+)+$/)',
    input: { s: `${'a'.repeat(30)}!` },
    env: { FLOSTRA_TRANSFORM_TIMEOUT_MS: '5000' },
    code: 'transform_timeout',
    limit: 'limit of 5000 ms',
    // It runs its whole time limit: health is asked while it runs, and it still runs afterwards.
    stillRunningAfterHealth: true,
  },
  {
    runaway: 'a string of 20,000 × 20,000 characters',
    expression: '$pad("", 20000, $pad("", 20000))',
    input: {},
    // Time enough for the heap to be what runs out.
    env: { FLOSTRA_TRANSFORM_TIMEOUT_MS: '60000', FLOSTRA_TRANSFORM_MEMORY_MB: '64' },
    code: 'transform_memory_exceeded',
    limit: 'limit of 64 MB',
    // It runs out of heap within a second or two: health is asked while it may still run.
    stillRunningAfterHealth: false,
  },
])('a transform with $runaway', ({ expression, input, env, code, limit, stillRunningAfterHealth }) => {
  let t: TestApp;
  let api: ApiClient;

  async function publishTransform(name: string, transform: string): Promise<void> {
    const res = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, {
      token: TOKENS.adminA,
      body: { nodes: [{ id: 't', type: 'transform', config: { expression: transform }, retry: RETRIED }], edges: [], retry: RETRIED },
    });
    expect(res.status).toBe(201);
  }

  const ended = (executionId: string) =>
    eventually(
      async () => {
        const execution = await view(api, executionId);
        return !['queued', 'running'].includes(execution.status as string) && execution;
      },
      { what: `execution ${executionId} to end`, timeoutMs: 120_000 },
    );

  beforeAll(async () => {
    t = await startTestApp('pglite', env, { worker: true });
    api = client(t.url);
    await publishTransform('runaway', expression);
    await publishTransform('fine', '$uppercase(input.s)');
  });
  afterAll(() => t?.close());

  it(`fails ${code}, not retried, while /health/live keeps answering; the next execution succeeds`, async () => {
    const { executionId } = await start(api, 'runaway', { input });

    // Claimed: its one node, a transform, is being evaluated now (a pure node reports nothing before it ends).
    await eventually(async () => (await view(api, executionId)).status === 'running', `execution ${executionId} to run`);
    const answers: number[] = [];
    for (let i = 0; i < 5; i++) {
      answers.push((await fetch(`${t.url}/health/live`)).status);
      await sleep(20);
    }
    const meanwhile = await view(api, executionId);
    expect(answers).toEqual([200, 200, 200, 200, 200]);
    if (stillRunningAfterHealth) expect(meanwhile.status).toBe('running');

    const execution = await ended(executionId);
    expect(execution.status).toBe('failed');
    expect(execution.error).toEqual({ code, message: expect.stringContaining(limit), retryable: false });
    expect(execution.attempts).toHaveLength(1);
    const types = (await historyOf(api, executionId)).map((event) => event.type);
    expect(types.filter((type) => type === 'NodeFailed')).toHaveLength(1);
    expect(types).not.toContain('AttemptTimedOut');

    expect((await fetch(`${t.url}/health/live`)).status).toBe(200);
    const next = await start(api, 'fine', { input: { s: 'still here' } });
    const done = await ended(next.executionId);
    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ t: 'STILL HERE' });
  });
});
