import { describe, expect, it } from '@jest/globals';
import { subworkflowCycle, targetKey } from './subworkflow-cycles.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';
import { parseWorkflowDefinition } from './workflow-graph.validation.js';

function graphOf(...targets: (string | { workflow: string; revision: number })[]): WorkflowGraph {
  const nodes = [
    { id: 'start', type: 'noop' },
    ...targets.map((t, i) => ({ id: `call${i}`, type: 'subworkflow', config: typeof t === 'string' ? { workflow: t } : t })),
  ];
  const parsed = parseWorkflowDefinition({ nodes, edges: [] });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.graph;
}

const latest = (entries: Record<string, WorkflowGraph>) =>
  new Map(Object.entries(entries).map(([name, graph]) => [targetKey({ workflow: name, revision: undefined }), graph]));

describe('sub-workflow cycles at publish', () => {
  it('finds a → b → a through the latest revision of b, at the node that leaves for b', () => {
    expect(subworkflowCycle('a', graphOf('c', 'b'), latest({ b: graphOf('a'), c: graphOf() }))).toEqual({
      index: 2,
      path: ['a', 'b', 'a'],
    });
  });

  it('finds a longer cycle, a → b → c → a', () => {
    expect(subworkflowCycle('a', graphOf('b'), latest({ b: graphOf('c'), c: graphOf('a') }))?.path).toEqual(['a', 'b', 'c', 'a']);
  });

  it('finds a cycle through a pinned revision, which is read as pinned', () => {
    const graphs = new Map([[targetKey({ workflow: 'b', revision: 1 }), graphOf('a')], ...latest({ b: graphOf() })]);
    expect(subworkflowCycle('a', graphOf({ workflow: 'b', revision: 1 }), graphs)?.path).toEqual(['a', 'b', 'a']);
    expect(subworkflowCycle('a', graphOf('b'), graphs)).toBeNull();
  });

  it('finds none in a tree or a diamond, and ends on a cycle that does not pass through the graph published', () => {
    expect(subworkflowCycle('a', graphOf('b', 'c'), latest({ b: graphOf('d'), c: graphOf('d'), d: graphOf() }))).toBeNull();
    expect(subworkflowCycle('a', graphOf('b'), latest({ b: graphOf('c'), c: graphOf('b') }))).toBeNull();
  });
});
