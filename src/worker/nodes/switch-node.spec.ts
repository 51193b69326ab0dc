import { describe, expect, it } from '@jest/globals';
import jsonata from 'jsonata';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import type { NodeContext } from '../dag/dag.types.js';
import { createSwitchNode } from './switch-node.js';
import type { TransformSandbox } from './transform-sandbox.js';

/** The sandbox's contract (an expression over an input, as JSON), evaluated in process. */
const evaluated: string[] = [];
const inProcess = {
  evaluate: async (expression: string, input: unknown) => {
    evaluated.push(expression);
    return (await jsonata(expression).evaluate(input)) as unknown;
  },
} as unknown as TransformSandbox;

const switchNode = graphOf(
  [
    {
      id: 'S',
      type: 'switch',
      config: {
        cases: [
          { when: 'input.amount > 100', to: ['big'] },
          { when: 'input.tags /* any tag */', to: ['tagged', 'audit'] },
        ],
        default: ['small'],
      },
    },
    'big',
    'tagged',
    'audit',
    'small',
  ],
  'S>big',
  'S>tagged',
  'S>audit',
  'S>small',
).nodes[0];

const run = (input: Record<string, unknown>) => {
  evaluated.length = 0;
  if (switchNode.type !== 'switch') throw new Error('not a switch');
  const ctx = { input: { input, nodes: {} }, signal: new AbortController().signal } as unknown as NodeContext;
  return createSwitchNode(inProcess)(switchNode, ctx);
};

describe('the switch node type', () => {
  it('takes the first case that holds and evaluates no later predicate', async () => {
    expect(await run({ amount: 500, tags: ['x'] })).toEqual({ case: 0, to: ['big'] });
    expect(evaluated).toHaveLength(1);
  });

  it('casts each predicate with $boolean: a non-empty array holds, an empty one does not', async () => {
    expect(await run({ amount: 5, tags: ['x'] })).toEqual({ case: 1, to: ['tagged', 'audit'] });
    expect(await run({ amount: 5, tags: [] })).toEqual({ case: 'default', to: ['small'] });
    expect(await run({})).toEqual({ case: 'default', to: ['small'] });
  });
});
