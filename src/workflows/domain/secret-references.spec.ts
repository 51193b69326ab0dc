import { describe, expect, it } from '@jest/globals';
import {
  nodeSecretNames,
  referencedSecretNames,
  scanSecretReferences,
  secretReferenceIssues,
  substituteSecretReferences,
} from './secret-references.js';
import { parseWorkflowDefinition } from './workflow-graph.validation.js';

const http = (id: string, config: Record<string, unknown>) => ({
  id,
  type: 'http',
  config: { method: 'POST', url: 'https://api.example.com/x', ...config },
});

describe('the secret reference grammar', () => {
  it.each([
    ['{{secret:API_KEY}}', ['API_KEY']],
    ['Bearer {{secret:token.v2}}', ['token.v2']],
    ['{{secret:a}}{{secret:b-c}} and {{secret:a}}', ['a', 'b-c', 'a']],
    ['{{secret:X}}}', ['X']],
    [`{{secret:${'n'.repeat(128)}}}`, ['n'.repeat(128)]],
    ['no reference, {{ other }} and {{secretary}}', []],
  ])('finds the names in %j', (text, names) => {
    expect(scanSecretReferences(text)).toEqual({ names, invalid: [] });
  });

  it.each([
    ['{{secret:}}', '{{secret:}}'],
    ['{{secret:a b}}', '{{secret:a b}}'],
    ['x {{ secret:X }} y', '{{ secret:X }}'],
    ['{{SECRET:X}}', '{{SECRET:X}}'],
    ['{{secret :X}}', '{{secret :X}}'],
    ['{{secret:X }}', '{{secret:X }}'],
    ['{{secret:X}', '{{secret:X}'],
    ['{{secret:a/b}}', '{{secret:a/b}}'],
    [`{{secret:${'n'.repeat(129)}}}`, `{{secret:${'n'.repeat(38)}…`],
  ])('refuses %j', (text, shown) => {
    expect(scanSecretReferences(text)).toEqual({ names: [], invalid: [shown] });
  });

  it('substitutes each valid reference and leaves other text alone', () => {
    const values = new Map([
      ['A', 'alpha $& $1'],
      ['B', 'beta'],
    ]);
    expect(substituteSecretReferences('x {{secret:A}} y {{secret:B}}{{secret:A}} {{ other }}', (name) => values.get(name)!)).toBe(
      'x alpha $& $1 y betaalpha $& $1 {{ other }}',
    );
  });
});

describe('the names a graph references', () => {
  it('reads the url, header values and body strings of http nodes, at any depth, sorted and once each', () => {
    const graph = {
      nodes: [
        http('a', {
          url: 'https://api.example.com/x?key={{secret:KEY}}',
          headers: { Authorization: 'Bearer {{secret:TOKEN}}' },
          body: { nested: [{ deep: 'x {{secret:BODY}}' }], again: '{{secret:KEY}}' },
        }),
        http('b', { headers: { 'X-Other': '{{secret:OTHER}}' } }),
        { id: 'c', type: 'noop', config: {} },
      ],
    };
    expect(referencedSecretNames(graph)).toEqual(['BODY', 'KEY', 'OTHER', 'TOKEN']);
    expect(nodeSecretNames(graph.nodes[1])).toEqual(['OTHER']);
    expect(nodeSecretNames(graph.nodes[2])).toEqual([]);
  });

  it('ignores reference text in node types that cannot use secrets (graphs published before references existed)', () => {
    expect(referencedSecretNames({ nodes: [{ type: 'transform', config: { expression: '"{{secret:X}}"' } }] })).toEqual([]);
  });
});

describe('publishing a graph with secret references', () => {
  it('accepts references where they may stand and keeps their text', () => {
    const node = http('call', {
      url: 'https://api.example.com/{{secret:PATH}}?key={{secret:KEY}}',
      headers: { Authorization: 'Bearer {{secret:TOKEN}}' },
      body: { token: '{{secret:TOKEN}}', list: ['{{secret:KEY}}'] },
    });
    const result = parseWorkflowDefinition({ nodes: [node] });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.graph.nodes[0].config).toMatchObject(node.config);
  });

  it('refuses bad syntax with the node id and the field path', () => {
    const result = parseWorkflowDefinition({
      nodes: [
        http('call', {
          headers: { Authorization: 'Bearer {{ secret:TOKEN }}' },
          body: { items: ['ok', { deep: '{{secret:}}' }] },
        }),
      ],
    });
    expect(result).toEqual({
      ok: false,
      issues: [
        {
          path: 'nodes[0].config.headers.Authorization',
          message: expect.stringMatching(/^node "call": "\{\{ secret:TOKEN \}\}" is not a valid/),
        },
        { path: 'nodes[0].config.body.items[1].deep', message: expect.stringMatching(/^node "call": "\{\{secret:\}\}" is not a valid/) },
      ],
    });
  });

  it('refuses references in node types that cannot use them', () => {
    const result = parseWorkflowDefinition({
      nodes: [
        { id: 't', type: 'transform', config: { expression: '"{{secret:X}}"' } },
        { id: 'f', type: 'fail', config: { message: '{{secret:X}}' } },
        { id: 'p', type: 'approval', config: { action: { note: ['{{secret:X}}'] } } },
      ],
    });
    expect(result.ok).toBe(false);
    if (!result.ok)
      expect(result.issues).toEqual([
        {
          path: 'nodes[0].config.expression',
          message: 'node "t": secret references are only allowed in http nodes, not in transform nodes',
        },
        { path: 'nodes[1].config.message', message: 'node "f": secret references are only allowed in http nodes, not in fail nodes' },
        {
          path: 'nodes[2].config.action.note[0]',
          message: 'node "p": secret references are only allowed in http nodes, not in approval nodes',
        },
      ]);
  });

  it('refuses references in body keys and in the host of the url', () => {
    const result = parseWorkflowDefinition({
      nodes: [http('call', { body: { '{{secret:K}}': 1 } }), http('host', { url: 'https://{{secret:HOST}}/x' })],
    });
    expect(result.ok).toBe(false);
    if (!result.ok)
      expect(result.issues).toEqual([
        { path: 'nodes[1].config.url', message: 'an absolute http(s) URL is required' },
        { path: 'nodes[0].config.body["{{secret:K}}"]', message: 'node "call": secret references are not allowed in keys, only in values' },
      ]);
  });

  it('reports reference problems together with the other problems of the body', () => {
    const issues = secretReferenceIssues({ nodes: [{ id: 'x', type: 'noop', config: { bogus: '{{secret:A}}' } }, 'not a node'] });
    expect(issues).toEqual([
      { path: 'nodes[0].config.bogus', message: 'node "x": secret references are only allowed in http nodes, not in noop nodes' },
    ]);
    const result = parseWorkflowDefinition({ nodes: [{ id: 'x', type: 'noop', config: { bogus: '{{secret:A}}' } }] });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues.map((i) => i.path)).toEqual(['nodes[0].config.bogus', 'nodes[0].config.bogus']);
  });
});
