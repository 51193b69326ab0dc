import { describe, expect, it } from '@jest/globals';
import { findCycles, indexGraph, topologicalOrder } from './graph.js';

const graph = (ids: string, ...pairs: string[]) => ({
  nodes: ids.split(',').map((id) => ({ id })),
  edges: pairs.map((pair) => {
    const [from, to] = pair.split('>');
    return { from: from, to: to };
  }),
});

describe('the graph index', () => {
  const index = indexGraph(graph('A,B,D,E', 'A>B', 'A>D', 'B>D'));

  it('lists predecessors and successors of every node', () => {
    expect(Object.fromEntries(index.predecessors)).toEqual({ A: [], B: ['A'], D: ['A', 'B'], E: [] });
    expect(Object.fromEntries(index.successors)).toEqual({ A: ['B', 'D'], B: ['D'], D: [], E: [] });
  });

  it('names the roots and the leaves in declaration order', () => {
    expect(index.roots).toEqual(['A', 'E']);
    expect(index.leaves).toEqual(['D', 'E']);
  });

  it('ignores duplicate edges and edges to undeclared nodes', () => {
    const messy = indexGraph(graph('a,b', 'a>b', 'a>b', 'a>ghost'));
    expect(messy.successors.get('a')).toEqual(['b']);
    expect(messy.predecessors.get('b')).toEqual(['a']);
  });
});

describe('topological order', () => {
  it('puts D after both A and B in A→B, A→D, B→D, whatever the declaration order', () => {
    expect(topologicalOrder(graph('D,B,A', 'A>B', 'A>D', 'B>D'))).toEqual(['A', 'B', 'D']);
  });

  it('breaks ties by declaration order', () => {
    expect(topologicalOrder(graph('c,a,b,z', 'z>b'))).toEqual(['c', 'a', 'z', 'b']);
  });

  it('places every node after all of its predecessors', () => {
    const g = graph('f,e,d,c,b,a', 'a>b', 'a>c', 'b>d', 'c>d', 'd>e', 'a>e', 'e>f', 'c>f');
    const order = topologicalOrder(g);
    expect([...order].sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    for (const { from, to } of g.edges) expect(order.indexOf(from)).toBeLessThan(order.indexOf(to));
  });

  it('accepts a prebuilt index', () => {
    expect(topologicalOrder(indexGraph(graph('b,a', 'a>b')))).toEqual(['a', 'b']);
  });

  it('refuses a cyclic graph, naming the nodes it could not order', () => {
    expect(() => topologicalOrder(graph('a,b,c', 'a>b', 'b>c', 'c>b'))).toThrow('cycle among b, c');
  });
});

describe('cycle detection', () => {
  it('finds none in a DAG', () => {
    expect(findCycles(graph('A,B,D', 'A>B', 'A>D', 'B>D'))).toEqual([]);
  });

  it('reports a self-loop as a one-node cycle', () => {
    expect(findCycles(graph('a,b', 'a>b', 'b>b'))).toEqual([['b']]);
  });

  it('reports one cycle per strongly connected component, in declaration order', () => {
    expect(findCycles(graph('x,p,q,a,b,c', 'c>a', 'a>b', 'b>c', 'x>p', 'p>q', 'q>p'))).toEqual([
      ['p', 'q'],
      ['a', 'b', 'c'],
    ]);
  });
});
