import { afterAll, describe, expect, it } from '@jest/globals';
import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
import { NodeError } from '../dag/node-error.js';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';
import { createTransformNode } from './transform-node.js';
import { DEFAULT_TRANSFORM_SANDBOX, TransformSandbox, type TransformSandboxOptions } from './transform-sandbox.js';

const transformNode = (expression: string) =>
  graphOf([{ id: 'T', type: 'transform', config: { expression } }]).nodes[0] as NodeOfType<'transform'>;

const input = { input: { order: 7, items: [{ price: 2 }, { price: 3 }] }, nodes: { A: { x: 1 } } };

// Evaluator processes are started by the sandboxes below: integration tier.
const sandboxes: TransformSandbox[] = [];
function sandbox(options: Partial<TransformSandboxOptions> = {}): TransformSandbox {
  const created = new TransformSandbox(options);
  sandboxes.push(created);
  return created;
}
afterAll(() => Promise.all(sandboxes.map((created) => created.close())));

describe('transform node', () => {
  const shared = sandbox();
  const transform = createTransformNode(shared);

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
    const failure = (expression: string, options: Partial<TransformSandboxOptions> = {}) =>
      createTransformNode(Object.keys(options).length === 0 ? shared : sandbox(options))(
        transformNode(expression),
        contextFor('T', { input }),
      ).catch((e: unknown) => e);

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

    it('stops an evaluation that runs past its time budget with transform_timeout, naming the limit', async () => {
      const error = await failure('[1..1000000].($ * 2) ~> $count()', { timeoutMs: 20, maxSequence: 100_000_000 });

      expect(error).toMatchObject({ code: 'transform_timeout', retryable: false, message: expect.stringContaining('limit of 20 ms') });
    });

    it('stops an evaluation that builds too long a sequence', async () => {
      const error = await failure('[1..1000].($ * 2)', { maxSequence: 100 });

      expect(error).toMatchObject({ code: 'transform_failed', message: expect.stringContaining('D2015') });
    });
  });
});

describe('the transform sandbox', () => {
  const evaluate = (on: TransformSandbox, expression: string, value: unknown = {}, signal = new AbortController().signal) =>
    on.evaluate(expression, value, signal).catch((e: unknown) => e);

  it('kills a catastrophic regular expression at its time limit while this process goes on', async () => {
    const limited = sandbox({ timeoutMs: 1_000 });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    try {
      // (a+)+$ against 40 a's and a ! backtracks 2^40 times: hours, natively, in one step of JSONata.
      const error = await evaluate(limited, '$match(s, /(a+)+$/)', { s: `${'a'.repeat(40)}!` });
      expect(error).toBeInstanceOf(NodeError);
      expect(error).toMatchObject({ code: 'transform_timeout', retryable: false, message: expect.stringContaining('limit of 1000 ms') });
    } finally {
      clearInterval(ticker);
    }
    expect(ticks).toBeGreaterThan(0);
    expect(await evaluate(limited, '1 + 1')).toBe(2);
    expect(limited.stats().started).toBe(2);
  });

  it('fails an evaluation that exhausts its heap with transform_memory_exceeded, and starts a fresh process', async () => {
    // A generous time limit, so that memory is what runs out: 20,000 × 20,000 characters.
    const limited = sandbox({ timeoutMs: 60_000, memoryMb: 64 });
    const error = await evaluate(limited, '$pad("", 20000, $pad("", 20000))');
    expect(error).toBeInstanceOf(NodeError);
    expect(error).toMatchObject({
      code: 'transform_memory_exceeded',
      retryable: false,
      message: expect.stringContaining('limit of 64 MB'),
    });
    expect(await evaluate(limited, '"still " & "here"')).toBe('still here');
    expect(limited.stats()).toEqual({ started: 2, alive: 1 });
  });

  it('runs at most its number of processes; the others wait their turn', async () => {
    const pooled = sandbox({ processes: 2 });
    const results = await Promise.all(Array.from({ length: 6 }, (_, n) => evaluate(pooled, 'n * 2', { n })));
    expect(results).toEqual([0, 2, 4, 6, 8, 10]);
    expect(pooled.stats().started).toBe(2);
  });

  it('lets an evaluation waiting for a process go when its run is cancelled', async () => {
    const single = sandbox({ processes: 1, timeoutMs: 2_000 });
    const busy = evaluate(single, '$match(s, /(a+)+$/)', { s: `${'a'.repeat(40)}!` });
    const controller = new AbortController();
    const waiting = evaluate(single, '1', {}, controller.signal);
    controller.abort(new Error('cancelled'));
    expect(await waiting).toEqual(new Error('cancelled'));
    expect(await busy).toMatchObject({ code: 'transform_timeout' });
  });

  it('keeps the defaults documented', () => {
    expect(DEFAULT_TRANSFORM_SANDBOX).toEqual({ timeoutMs: 1_000, memoryMb: 64, maxDepth: 500, maxSequence: 100_000, processes: 2 });
  });
});
