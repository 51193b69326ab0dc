import { describe, expect, it } from '@jest/globals';
import { codeSyntaxIssues } from './code-syntax.js';
import { workflowGraphSchema } from './workflow-graph.schema.js';

const graph = workflowGraphSchema.parse({
  nodes: [
    { id: 'ok', type: 'code', config: { language: 'javascript', source: 'return 1' } },
    { id: 't', type: 'transform', config: { expression: '1 +' } },
    { id: 'broken', type: 'code', config: { language: 'javascript', source: 'return (' } },
  ],
});

describe('codeSyntaxIssues', () => {
  it('given code nodes, when one does not compile, then it alone is reported at its source', async () => {
    const checked: string[] = [];
    const issues = await codeSyntaxIssues(graph, async (source) => {
      checked.push(source);
      return source === 'return (' ? 'SyntaxError: unexpected end of input' : null;
    });

    expect(checked).toEqual(['return 1', 'return (']);
    expect(issues).toEqual([{ path: 'nodes[2].config.source', message: 'does not compile: SyntaxError: unexpected end of input' }]);
  });
});
