import { describe, expect, it } from '@jest/globals';
import type { ValidationIssue } from '../../core/errors.js';
import { MAX_EDGES, MAX_GRAPH_BYTES, MAX_NODES, MAX_REPORTED_ISSUES } from './workflow-graph.limits.js';
import { parseWorkflowDefinition, validateGraphStructure } from './workflow-graph.validation.js';

const nodes = (...ids: string[]) => ids.map((id) => ({ id, type: 'noop' }));
const edges = (...pairs: string[]) =>
  pairs.map((pair) => {
    const [from, to] = pair.split('>');
    return { from: from, to: to };
  });
const issuesOf = (body: unknown): ValidationIssue[] => {
  const result = parseWorkflowDefinition(body);
  if (result.ok) throw new Error('expected the graph to be rejected');
  return result.issues;
};

describe('graph validation', () => {
  it('accepts a diamond: A→B, A→D, B→D', () => {
    expect(validateGraphStructure({ nodes: nodes('A', 'B', 'D'), edges: edges('A>B', 'A>D', 'B>D') })).toEqual([]);
  });

  it('accepts disconnected nodes (several roots)', () => {
    expect(validateGraphStructure({ nodes: nodes('a', 'b'), edges: [] })).toEqual([]);
  });

  it('requires at least one node', () => {
    expect(validateGraphStructure({ nodes: [], edges: [] })).toEqual([{ path: 'nodes', message: 'a workflow needs at least one node' }]);
  });

  it('rejects a duplicate node id and points at the first declaration', () => {
    expect(validateGraphStructure({ nodes: nodes('a', 'b', 'a'), edges: [] })).toEqual([
      { path: 'nodes[2].id', message: 'duplicate node id "a" (first declared at nodes[0])' },
    ]);
  });

  it('rejects edges to or from undeclared nodes, naming the end', () => {
    expect(validateGraphStructure({ nodes: nodes('a'), edges: edges('a>ghost', 'phantom>a') })).toEqual([
      { path: 'edges[0].to', message: 'unknown node "ghost"' },
      { path: 'edges[1].from', message: 'unknown node "phantom"' },
    ]);
  });

  it('rejects a self-loop as such, not as a cycle', () => {
    expect(validateGraphStructure({ nodes: nodes('a'), edges: edges('a>a') })).toEqual([
      { path: 'edges[0]', message: 'self-loop on node "a"' },
    ]);
  });

  it('rejects a duplicate edge and points at the first one', () => {
    expect(validateGraphStructure({ nodes: nodes('a', 'b'), edges: edges('a>b', 'a>b') })).toEqual([
      { path: 'edges[1]', message: 'duplicate edge a → b (first declared at edges[0])' },
    ]);
  });

  describe('when the graph has a cycle', () => {
    it('reports its nodes in edge order, back to the first', () => {
      expect(validateGraphStructure({ nodes: nodes('a', 'b', 'c'), edges: edges('a>b', 'b>c', 'c>a') })).toEqual([
        { path: 'edges', message: 'cycle: a → b → c → a' },
      ]);
    });

    it('starts the report at the first-declared node of the cycle', () => {
      const issues = validateGraphStructure({ nodes: nodes('start', 'y', 'x'), edges: edges('start>x', 'x>y', 'y>x') });
      expect(issues).toEqual([{ path: 'edges', message: 'cycle: y → x → y' }]);
    });

    it('reports the shortest cycle through that node', () => {
      const issues = validateGraphStructure({ nodes: nodes('a', 'b', 'c', 'd'), edges: edges('a>b', 'b>c', 'c>d', 'd>a', 'b>a') });
      expect(issues).toEqual([{ path: 'edges', message: 'cycle: a → b → a' }]);
    });

    it('reports each independent cycle', () => {
      const issues = validateGraphStructure({
        nodes: nodes('a', 'b', 'c', 'd', 'e'),
        edges: edges('a>b', 'b>a', 'b>c', 'c>d', 'd>e', 'e>c'),
      });
      expect(issues.map((issue) => issue.message)).toEqual(['cycle: a → b → a', 'cycle: c → d → e → c']);
    });
  });

  describe('limits', () => {
    it(`allows ${MAX_NODES} nodes and refuses one more`, () => {
      const many = Array.from({ length: MAX_NODES + 1 }, (_, i) => ({ id: `n${i}` }));
      expect(validateGraphStructure({ nodes: many.slice(0, MAX_NODES), edges: [] })).toEqual([]);
      expect(validateGraphStructure({ nodes: many, edges: [] })).toEqual([
        { path: 'nodes', message: `too many nodes: ${MAX_NODES + 1}; the limit is ${MAX_NODES}` },
      ]);
    });

    it(`allows ${MAX_EDGES} edges and refuses one more`, () => {
      const ids = Array.from({ length: 70 }, (_, i) => ({ id: `n${i}` }));
      // Every forward pair of 70 nodes: 2,415 edges, all acyclic.
      const all = ids.flatMap((a, i) => ids.slice(i + 1).map((b) => ({ from: a.id, to: b.id })));
      expect(validateGraphStructure({ nodes: ids, edges: all.slice(0, MAX_EDGES) })).toEqual([]);
      expect(validateGraphStructure({ nodes: ids, edges: all.slice(0, MAX_EDGES + 1) })).toEqual([
        { path: 'edges', message: `too many edges: ${MAX_EDGES + 1}; the limit is ${MAX_EDGES}` },
      ]);
    });

    it(`refuses a body over ${MAX_GRAPH_BYTES} bytes with that issue alone`, () => {
      const body = { nodes: [{ id: 'a', type: 'transform', config: { expression: 'x'.repeat(MAX_GRAPH_BYTES) } }], edges: [] };
      expect(issuesOf(body)).toEqual([{ path: '', message: expect.stringMatching(new RegExp(`limit is ${MAX_GRAPH_BYTES}$`)) }]);
    });

    it('reports a long chain without exhausting the stack', () => {
      const ids = Array.from({ length: 20_000 }, (_, i) => ({ id: `n${i}` }));
      const chain = ids.slice(1).map((node, i) => ({ from: ids[i].id, to: node.id }));
      const issues = validateGraphStructure({ nodes: ids, edges: [...chain, { from: 'n19999', to: 'n0' }] });
      expect(issues.map((issue) => issue.path)).toEqual(['nodes', 'edges', 'edges']);
      expect(issues[2].message).toMatch(/^cycle: n0 → n1 → .* → n19999 → n0$/);
    });

    it(`reports the first ${MAX_REPORTED_ISSUES} issues and counts the rest`, () => {
      const issues = issuesOf({ nodes: Array.from({ length: 150 }, () => ({ id: 'bad id', type: 'noop' })), edges: [] });
      expect(issues).toHaveLength(MAX_REPORTED_ISSUES + 1);
      expect(issues.at(-1)).toEqual({ path: '', message: `and ${150 + 149 - MAX_REPORTED_ISSUES} more issues` });
    });
  });

  describe('when a body has problems of several kinds', () => {
    it('reports all of them in one answer: fields, references and cycles', () => {
      const issues = issuesOf({
        nodes: [
          { id: 'a', type: 'noop' },
          { id: 'b', type: 'delay', config: { ms: -5 } },
          { id: 'c', type: 'teleport' },
          { id: 'd', type: 'noop' },
        ],
        edges: edges('a>b', 'b>c', 'c>a', 'd>nowhere'),
      });
      expect(issues).toEqual([
        { path: 'nodes[1].config.ms', message: expect.any(String) },
        { path: 'nodes[2].type', message: expect.stringContaining('unknown node type') },
        { path: 'edges[3].to', message: 'unknown node "nowhere"' },
        { path: 'edges', message: 'cycle: a → b → c → a' },
      ]);
    });

    it('still reports field problems when the shape is too broken for structural checks', () => {
      expect(issuesOf({ nodes: 'a,b', edges: [] })).toEqual([{ path: 'nodes', message: expect.any(String) }]);
      expect(issuesOf(null)).toEqual([{ path: '', message: expect.any(String) }]);
    });
  });
});
