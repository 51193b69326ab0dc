import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { historyOf } from '../live/live-scenario.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { start, view } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { MAX_RESULT_MESSAGE_BYTES } from '../../src/core/bus.port.js';
import { MAX_NODE_OUTPUT_BYTES } from '../../src/worker/runtime/output-limit.js';

/** A transform whose output, a string of `bytes - 2` characters, is `bytes` long as JSON. */
const stringOfJsonBytes = (bytes: number) => `$pad("", ${bytes - 2}, "x")`;

/** Retried on any retryable failure, with a short lease: a result that never arrived would time out soon. */
const POLICY = { retry: { maxAttempts: 3, initialIntervalMs: 0 }, timeouts: { leaseMs: 3_000 } };

describe('a node output over the result size limit (promise 6)', () => {
  let t: TestApp;
  let api: ApiClient;

  /** Publishes one-level graphs of transforms, retried and leased as POLICY says. */
  async function publishTransforms(name: string, expressions: Record<string, string>): Promise<void> {
    const nodes = Object.entries(expressions).map(([id, expression]) => ({ id, type: 'transform', config: { expression } }));
    const res = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: { nodes, edges: [], ...POLICY } });
    expect(res.status).toBe(201);
  }

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: true });
    api = client(t.url);
    // Just over what one result message may carry, the envelope aside: dead-lettered before.
    await publishTransforms('over-the-message', { big: stringOfJsonBytes(MAX_RESULT_MESSAGE_BYTES + 1) });
    // Over the node output limit, which leaves the message room for its envelope.
    await publishTransforms('over-the-node-limit', { big: stringOfJsonBytes(MAX_NODE_OUTPUT_BYTES + 1) });
    // Each leaf fits in its own message; the two together, the execution's output, do not.
    const half = Math.ceil(MAX_RESULT_MESSAGE_BYTES / 2);
    await publishTransforms('two-halves', { left: stringOfJsonBytes(half), right: stringOfJsonBytes(half) });
    await publishTransforms('just-fits', { fits: stringOfJsonBytes(MAX_NODE_OUTPUT_BYTES) });
  });
  afterAll(() => t?.close());

  async function ended(executionId: string) {
    return eventually(
      async () => {
        const execution = await view(api, executionId);
        return ['succeeded', 'failed', 'timed_out', 'cancelled'].includes(execution.status as string) && execution;
      },
      { what: 'the execution to end', timeoutMs: 60_000 },
    );
  }

  it.each([
    ['just over the result size limit', 'over-the-message'],
    ['one byte over the node output limit', 'over-the-node-limit'],
  ])(
    '%s fails its node and the execution at once with output_too_large, the limit named; no time-out, no retry',
    async (_name, workflow) => {
      const { executionId } = await start(api, workflow);
      const execution = await ended(executionId);

      expect(execution.status).toBe('failed');
      expect(execution.error).toEqual({
        code: 'output_too_large',
        message: expect.stringContaining(`the limit is ${MAX_NODE_OUTPUT_BYTES} bytes`),
        retryable: false,
      });
      expect(execution.nodes).toEqual([expect.objectContaining({ nodeId: 'big', status: 'failed', error: execution.error })]);
      expect(execution.attempts).toHaveLength(1);
      const types = (await historyOf(api, executionId)).map((event) => event.type);
      expect(types).not.toContain('AttemptTimedOut');
      expect(types).toEqual(expect.arrayContaining(['NodeFailed', 'AttemptFailed', 'ExecutionFailed']));
    },
  );

  it('fails the execution when its leaves fit one by one but its output does not', async () => {
    const { executionId } = await start(api, 'two-halves');
    const execution = await ended(executionId);

    expect(execution.status).toBe('failed');
    expect(execution.error).toEqual({
      code: 'output_too_large',
      message: expect.stringContaining(`the limit is ${MAX_RESULT_MESSAGE_BYTES} bytes`),
      retryable: false,
    });
    expect(execution.nodes.map((node: { status: string }) => node.status)).toEqual(['succeeded', 'succeeded']);
    expect(execution.attempts).toHaveLength(1);
    expect((await historyOf(api, executionId)).map((event) => event.type)).not.toContain('AttemptTimedOut');
  });

  it('lets an output of exactly the limit through', async () => {
    const { executionId } = await start(api, 'just-fits');
    const execution = await ended(executionId);

    expect(execution.status).toBe('succeeded');
    // The view shows an output this large as `$omitted`; the history holds it whole.
    expect(execution.output).toHaveProperty('$omitted');
    const succeeded = (await historyOf(api, executionId)).find((event) => event.type === 'ExecutionSucceeded');
    expect((succeeded?.data as { output: { fits: string } }).output.fits).toHaveLength(MAX_NODE_OUTPUT_BYTES - 2);
  });
});
