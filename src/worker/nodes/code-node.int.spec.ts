import { afterAll, describe, expect, it } from '@jest/globals';
import { CodeSandbox } from '../../sandbox/code-sandbox.js';
import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
import { NodeError } from '../dag/node-error.js';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';
import { createCodeNode } from './code-node.js';

const codeNode = (source: string, limits: { timeoutMs?: number; memoryMb?: number } = {}) =>
  graphOf([{ id: 'C', type: 'code', config: { language: 'javascript', source, ...limits } }]).nodes[0] as NodeOfType<'code'>;

const input = { input: { order: 7, items: [{ price: 2 }, { price: 3 }] }, nodes: { A: { x: 1 } } };

// Interpreter threads are started by the sandbox: integration tier.
const sandbox = new CodeSandbox({ threads: 1 });
afterAll(() => sandbox.close());
const code = createCodeNode(sandbox);
const failureOf = async (source: string, limits = {}) => {
  try {
    await code(codeNode(source, limits), contextFor('C', { input }));
  } catch (error) {
    return error instanceof NodeError ? { code: error.code, message: error.message, retryable: error.retryable } : error;
  }
  throw new Error('expected the node to fail');
};

describe('code node', () => {
  it('given a function body, then its output is the value it returns over { input, nodes }', async () => {
    const source = 'return { total: input.input.items.reduce((sum, item) => sum + item.price, 0) + input.nodes.A.x }';
    expect(await code(codeNode(source), contextFor('C', { input }))).toEqual({ total: 6 });
  });

  it.each([
    ['a throw', 'throw new Error("no such order")', { code: 'code_error', message: 'Error: no such order' }],
    ['a syntax error', 'return (', { code: 'code_error', message: expect.stringContaining('does not compile: SyntaxError') }],
    ['a non-JSON result', 'return () => 1', { code: 'code_error', message: expect.stringContaining('is a function, not JSON') }],
    ['an infinite loop', 'for (;;) {}', { code: 'code_timeout', message: expect.stringContaining('limit of 50 ms') }],
    [
      'an allocation bomb',
      'const all = []; for (;;) all.push(new Array(1e4).fill(0))',
      { code: 'code_memory_exceeded', message: expect.stringContaining('limit of 4 MB') },
    ],
  ])('given %s, then the node fails with a non-retryable code naming why', async (_what, source, failure) => {
    expect(await failureOf(source, { timeoutMs: 50, memoryMb: 4 })).toEqual({ ...failure, retryable: false });
  });
});
