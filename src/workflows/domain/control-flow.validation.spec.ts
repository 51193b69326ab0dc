import { describe, expect, it } from '@jest/globals';
import { parseWorkflowDefinition } from './workflow-graph.validation.js';

const switchGraph = (config: unknown) => ({
  nodes: [
    { id: 'route', type: 'switch', config },
    { id: 'big', type: 'noop' },
    { id: 'small', type: 'noop' },
  ],
  edges: [
    { from: 'route', to: 'big' },
    { from: 'route', to: 'small' },
  ],
});

const mapGraph = (config: unknown) => ({ nodes: [{ id: 'each', type: 'map', config }] });

const issuesOf = (body: unknown) => {
  const result = parseWorkflowDefinition(body);
  return result.ok ? [] : result.issues;
};

describe('switch nodes at publish', () => {
  it('accepts cases and a default that name direct successors', () => {
    const result = parseWorkflowDefinition(switchGraph({ cases: [{ when: 'input.amount > 100', to: ['big'] }], default: ['small'] }));
    expect(result.ok).toBe(true);
  });

  it('refuses a target that is not a direct successor, naming the edge to add', () => {
    const body = switchGraph({ cases: [{ when: 'true', to: ['big', 'elsewhere'] }], default: ['route'] });
    expect(issuesOf(body)).toEqual([
      {
        path: 'nodes[0].config.cases[0].to[1]',
        message: '"elsewhere" is not a direct successor of switch "route"; add the edge route → elsewhere',
      },
      { path: 'nodes[0].config.default[0]', message: '"route" is not a direct successor of switch "route"; add the edge route → route' },
    ]);
  });

  it('refuses a predicate that does not parse, with where it fails', () => {
    const [issue] = issuesOf(switchGraph({ cases: [{ when: 'input.amount >', to: ['big'] }] }));
    expect(issue.path).toBe('nodes[0].config.cases[0].when');
    expect(issue.message).toMatch(/^the JSONata expression does not parse at character \d+: S0207/);
  });

  it('needs at least one case', () => {
    expect(issuesOf(switchGraph({ cases: [] })).map((issue) => issue.path)).toEqual(['nodes[0].config.cases']);
  });
});

describe('map nodes at publish', () => {
  it('fills the defaults: concurrency 10, the inner node’s retry policy', () => {
    const result = parseWorkflowDefinition(mapGraph({ items: 'input.orders', node: { type: 'noop' } }));
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const node = result.graph.nodes[0];
    expect(node.type === 'map' && node.config).toMatchObject({
      concurrency: 10,
      node: { type: 'noop', config: {}, retry: { maxAttempts: 1 } },
    });
  });

  it('refuses waiting kinds inside a map', () => {
    const configs: Record<string, object> = {
      approval: {},
      task: {},
      subworkflow: { workflow: 'child' },
      delay: { ms: 10 },
      wait_signal: { name: 'go' },
      map: {},
      switch: {},
    };
    for (const [type, config] of Object.entries(configs)) {
      const [issue] = issuesOf(mapGraph({ items: 'input', node: { type, config } }));
      expect(issue).toEqual({
        path: 'nodes[0].config.node.type',
        message:
          'a map runs one of noop, transform, code, http, fail per item (approval, task, subworkflow, delay and wait_signal nodes wait outside the worker)',
      });
    }
  });

  it('refuses an items expression or an inner transform that does not parse', () => {
    const issues = issuesOf(mapGraph({ items: '$count(', node: { type: 'transform', config: { expression: '{ "a": }' } } }));
    expect(issues.map((issue) => issue.path)).toEqual(['nodes[0].config.items', 'nodes[0].config.node.config.expression']);
  });

  it('bounds concurrency to 1..100 and checks the inner node’s own config', () => {
    const issues = issuesOf(mapGraph({ items: 'input', concurrency: 101, node: { type: 'fail', config: { code: '' } } }));
    expect(issues.map((issue) => issue.path).sort()).toEqual(['nodes[0].config.concurrency', 'nodes[0].config.node.config.code']);
  });
});
