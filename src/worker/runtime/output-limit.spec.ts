import { describe, expect, it } from '@jest/globals';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';
import { MAX_RESULT_MESSAGE_BYTES } from '../../core/bus.port.js';
import { NodeError } from '../dag/node-error.js';
import { limitNodeOutputs, MAX_NODE_OUTPUT_BYTES, RESULT_ENVELOPE_BYTES } from './output-limit.js';

const node = graphOf(['BIG']).nodes[0];
/** A string output whose JSON (the string and its two quotes) is exactly `bytes` long. */
const outputOf = (bytes: number, char = 'x') => char.repeat((bytes - 2) / Buffer.byteLength(char));

describe('limitNodeOutputs', () => {
  it('leaves room in the result message for its envelope', () => {
    expect(MAX_NODE_OUTPUT_BYTES).toBe(MAX_RESULT_MESSAGE_BYTES - RESULT_ENVELOPE_BYTES);
  });

  it('passes an output of exactly the limit through', async () => {
    const output = outputOf(100);
    await expect(limitNodeOutputs(async () => output, 100)(node, contextFor('BIG'))).resolves.toBe(output);
  });

  it('fails a node whose output is one byte over the limit with output_too_large, not retryable, naming the limit', async () => {
    const error = await limitNodeOutputs(async () => outputOf(102), 101)(node, contextFor('BIG')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeError);
    expect(error).toMatchObject({ code: 'output_too_large', retryable: false });
    expect((error as Error).message).toMatch(/^the output of node BIG is 102 bytes as JSON; the limit is 101 bytes/);
  });

  it('counts bytes of UTF-8, not characters', async () => {
    const error = await limitNodeOutputs(async () => outputOf(302, 'é'), 200)(node, contextFor('BIG')).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'output_too_large', message: expect.stringContaining('302 bytes') });
  });

  it('leaves a failure of the node itself as it was', async () => {
    const failure = new NodeError('http_500', 'down', true);
    await expect(
      limitNodeOutputs(async () => {
        throw failure;
      }, 10)(node, contextFor('BIG')),
    ).rejects.toBe(failure);
  });
});
