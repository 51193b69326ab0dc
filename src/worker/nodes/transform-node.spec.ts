import { describe, expect, it } from '@jest/globals';
import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
import { NodeError } from '../dag/node-error.js';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';
import { createTransformNode, DEFAULT_TRANSFORM_LIMITS } from './transform-node.js';

const transformNode = (expression: string) =>
  graphOf([{ id: 'T', type: 'transform', config: { expression } }]).nodes[0] as NodeOfType<'transform'>;

const input = { input: { order: 7, items: [{ price: 2 }, { price: 3 }] }, nodes: { A: { x: 1 } } };

describe('transform node', () => {
  const transform = createTransformNode();

  describe('when the expression evaluates', () => {
    it.each([
      ['input.order + nodes.A.x', 8],
      ['$sum(input.items.price)', 5],
      ['{ "total": $sum(input.items.price), "first": input.items[0] }', { total: 5, first: { price: 2 } }],
      ['input.items.price', [2, 3]],
      ['nodes.missing', null],
      ['function($x) { $x }', null],
      ['$sum', null],
    ])('%s gives %j', async (expression, expected) => {
      expect(await transform(transformNode(expression), contextFor('T', { input }))).toEqual(expected);
    });

    it('sees only the node input, not the process', async () => {
      expect(await transform(transformNode('process.env'), contextFor('T', { input }))).toBeNull();
    });
  });

  describe('when it cannot', () => {
    const failure = (expression: string, limits = DEFAULT_TRANSFORM_LIMITS) =>
      createTransformNode(limits)(transformNode(expression), contextFor('T', { input })).catch((e: unknown) => e);

    it('fails with transform_failed on a syntax error, not retryable', async () => {
      const error = await failure('input.order +');

      expect(error).toBeInstanceOf(NodeError);
      expect(error).toMatchObject({ code: 'transform_failed', retryable: false });
      expect((error as Error).message).toMatch(/^the expression does not parse: S\d{4} /);
    });

    it('fails with transform_failed on an evaluation error', async () => {
      expect(await failure('$number("abc")')).toMatchObject({ code: 'transform_failed', message: expect.stringContaining('D3030') });
    });

    it('stops runaway recursion', async () => {
      const error = await failure('($f := function($n) { 1 + $f($n + 1) }; $f(0))');

      expect(error).toMatchObject({ code: 'transform_failed', message: expect.stringContaining('D1011') });
    });

    it('stops an evaluation that runs past its time budget', async () => {
      const error = await failure('[1..1000000].($ * 2) ~> $count()', { timeoutMs: 20, maxDepth: 500, maxSequence: 100_000_000 });

      expect(error).toMatchObject({ code: 'transform_failed', message: expect.stringContaining('D1012') });
    });

    it('stops an evaluation that builds too long a sequence', async () => {
      const error = await failure('[1..1000].($ * 2)', { ...DEFAULT_TRANSFORM_LIMITS, maxSequence: 100 });

      expect(error).toMatchObject({ code: 'transform_failed', message: expect.stringContaining('D2015') });
    });
  });
});
