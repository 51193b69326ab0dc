import { describe, expect, it } from '@jest/globals';
import { DIGEST_PATTERN, workflowGraphDigest } from './workflow-digest.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';
import { parseWorkflowDefinition } from './workflow-graph.validation.js';

const graphOf = (body: unknown): WorkflowGraph => {
  const result = parseWorkflowDefinition(body);
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.graph;
};

const written = {
  nodes: [
    { id: 'fetch', type: 'http', config: { method: 'GET', url: 'https://x.test/a', headers: { b: '2', a: '1' } } },
    { id: 'shape', type: 'transform', config: { expression: '$.fetch.items' } },
    { id: 'done', type: 'noop' },
  ],
  edges: [
    { from: 'fetch', to: 'shape' },
    { from: 'shape', to: 'done' },
    { from: 'fetch', to: 'done' },
  ],
  retry: { maxAttempts: 3 },
};

describe('the graph digest', () => {
  it('is 64 hex characters of sha256', () => {
    expect(workflowGraphDigest(graphOf(written))).toMatch(DIGEST_PATTERN);
  });

  it('is the same for the same graph written in another order', () => {
    const reordered = {
      retry: { maxAttempts: 3 },
      edges: [
        { to: 'done', from: 'fetch' },
        { from: 'shape', to: 'done' },
        { from: 'fetch', to: 'shape' },
      ],
      nodes: [
        { type: 'noop', id: 'done' },
        { config: { expression: '$.fetch.items' }, id: 'shape', type: 'transform' },
        { id: 'fetch', config: { headers: { a: '1', b: '2' }, url: 'https://x.test/a', method: 'GET' }, type: 'http' },
      ],
    };
    expect(workflowGraphDigest(graphOf(reordered))).toBe(workflowGraphDigest(graphOf(written)));
  });

  it('is the same whether a default is written out or left implicit', () => {
    const explicit = { ...written, timeouts: { queueMs: 300_000, leaseMs: 30_000, executionMs: 86_400_000 } };
    expect(workflowGraphDigest(graphOf(explicit))).toBe(workflowGraphDigest(graphOf(written)));
  });

  it.each([
    [
      'a node config',
      { ...written, nodes: [{ ...written.nodes[0], config: { method: 'POST', url: 'https://x.test/a' } }, ...written.nodes.slice(1)] },
    ],
    ['an edge', { ...written, edges: written.edges.slice(1) }],
    ['a node', { ...written, nodes: [...written.nodes, { id: 'extra', type: 'noop' }] }],
    ['the retry policy', { ...written, retry: { maxAttempts: 4 } }],
    ['a join trigger', { ...written, nodes: [...written.nodes.slice(0, 2), { id: 'done', type: 'noop', trigger: 'all_done' }] }],
  ])('differs when %s changes', (_, changed) => {
    expect(workflowGraphDigest(graphOf(changed))).not.toBe(workflowGraphDigest(graphOf(written)));
  });

  it('distinguishes edge a→b from b→a', () => {
    const ab = graphOf({
      nodes: [
        { id: 'a', type: 'noop' },
        { id: 'b', type: 'noop' },
      ],
      edges: [{ from: 'a', to: 'b' }],
    });
    const ba = graphOf({
      nodes: [
        { id: 'a', type: 'noop' },
        { id: 'b', type: 'noop' },
      ],
      edges: [{ from: 'b', to: 'a' }],
    });
    expect(workflowGraphDigest(ab)).not.toBe(workflowGraphDigest(ba));
  });
});
