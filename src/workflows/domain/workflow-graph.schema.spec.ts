import { describe, expect, it } from '@jest/globals';
import type { ValidationIssue } from '../../core/errors.js';
import { parseWorkflowDefinition } from './workflow-graph.validation.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';

const graphOf = (body: unknown): WorkflowGraph => {
  const result = parseWorkflowDefinition(body);
  if (!result.ok) throw new Error(`expected a valid graph, got ${JSON.stringify(result.issues)}`);
  return result.graph;
};
const issuesOf = (body: unknown): ValidationIssue[] => {
  const result = parseWorkflowDefinition(body);
  if (result.ok) throw new Error('expected the graph to be rejected');
  return result.issues;
};
const oneNode = (node: Record<string, unknown>) => ({ nodes: [node], edges: [] });
const paths = (issues: ValidationIssue[]) => issues.map((issue) => issue.path);

describe('the publish body', () => {
  describe('when only the required fields are written', () => {
    it('fills every default: no automatic retry, sane timeouts, all_success joins', () => {
      expect(graphOf({ nodes: [{ id: 'a', type: 'noop' }] })).toEqual({
        nodes: [
          {
            id: 'a',
            type: 'noop',
            config: {},
            retry: { maxAttempts: 1, initialIntervalMs: 1_000, backoffCoefficient: 2, maxIntervalMs: 60_000, nonRetryable: [] },
            trigger: 'all_success',
          },
        ],
        edges: [],
        retry: { maxAttempts: 1, initialIntervalMs: 1_000, backoffCoefficient: 2, maxIntervalMs: 60_000, nonRetryable: [] },
        timeouts: { queueMs: 300_000, leaseMs: 30_000, executionMs: 86_400_000 },
      });
    });

    it('keeps what was written and defaults only the rest', () => {
      const graph = graphOf({ nodes: [{ id: 'a', type: 'noop' }], retry: { maxAttempts: 3 }, timeouts: { leaseMs: 5_000 } });
      expect(graph.retry.maxAttempts).toBe(3);
      expect(graph.retry.backoffCoefficient).toBe(2);
      expect(graph.timeouts).toEqual({ queueMs: 300_000, leaseMs: 5_000, executionMs: 86_400_000 });
    });

    it('treats nonRetryable codes as a set', () => {
      const graph = graphOf({ nodes: [{ id: 'a', type: 'noop' }], retry: { nonRetryable: ['b', 'a', 'b'] } });
      expect(graph.retry.nonRetryable).toEqual(['a', 'b']);
    });
  });

  describe('when a field is unknown', () => {
    it('names each unknown field, at any depth', () => {
      const issues = issuesOf({
        nodes: [{ id: 'a', type: 'delay', config: { ms: 1, jitter: 2 }, color: 'red' }],
        edges: [{ from: 'a', to: 'a', label: 'x' }],
        owner: 'me',
      });
      expect(paths(issues)).toEqual(expect.arrayContaining(['nodes[0].config.jitter', 'nodes[0].color', 'edges[0].label', 'owner']));
      expect(issues.find((issue) => issue.path === 'owner')?.message).toBe('unknown field');
    });
  });

  describe('node ids', () => {
    it.each(['a', 'A-b_9', 'x'.repeat(64)])('accepts %p', (id) => {
      expect(graphOf(oneNode({ id, type: 'noop' })).nodes[0].id).toBe(id);
    });

    it.each(['', 'x'.repeat(65), 'a b', 'a.b', 'é', 'a/b'])('rejects %p', (id) => {
      expect(paths(issuesOf(oneNode({ id, type: 'noop' })))).toContain('nodes[0].id');
    });
  });

  describe('node types', () => {
    it('rejects an unknown type and lists the known ones', () => {
      const [issue] = issuesOf(oneNode({ id: 'a', type: 'shell', config: { cmd: 'rm -rf /' } }));
      expect(issue).toEqual({
        path: 'nodes[0].type',
        message:
          'unknown node type; expected one of noop, delay, transform, code, http, approval, fail, task, switch, map, subworkflow, wait_signal',
      });
    });

    it('noop takes no configuration', () => {
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'noop', config: { x: 1 } })))).toEqual(['nodes[0].config.x']);
    });

    it('delay needs a whole number of milliseconds between 0 and one day', () => {
      expect(graphOf(oneNode({ id: 'a', type: 'delay', config: { ms: 0 } })).nodes[0].config).toEqual({ ms: 0 });
      expect(graphOf(oneNode({ id: 'a', type: 'delay', config: { ms: 86_400_000 } })).nodes[0].config).toEqual({ ms: 86_400_000 });
      for (const ms of [-1, 1.5, 86_400_001, '10']) {
        expect(paths(issuesOf(oneNode({ id: 'a', type: 'delay', config: { ms } })))).toEqual(['nodes[0].config.ms']);
      }
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'delay' })))).toEqual(['nodes[0].config']);
    });

    it('delay waits until an ISO-8601 time instead, but never both', () => {
      const until = '2030-01-01T00:00:00.000Z';
      expect(graphOf(oneNode({ id: 'a', type: 'delay', config: { until } })).nodes[0].config).toEqual({ until });
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'delay', config: { until: 'tomorrow' } })))).toEqual(['nodes[0].config.until']);
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'delay', config: { ms: 5, until } })))).toEqual(['nodes[0].config']);
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'delay', config: {} })))).toEqual(['nodes[0].config']);
    });

    it('wait_signal names its signal, with an optional time limit', () => {
      expect(graphOf(oneNode({ id: 'a', type: 'wait_signal', config: { name: 'go', timeoutMs: 1_000 } })).nodes[0].config).toEqual({
        name: 'go',
        timeoutMs: 1_000,
      });
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'wait_signal', config: { name: 'no spaces' } })))).toEqual(['nodes[0].config.name']);
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'wait_signal', config: { name: 'go', timeoutMs: 0 } })))).toEqual([
        'nodes[0].config.timeoutMs',
      ]);
    });

    it('transform needs a non-empty expression of at most 4 KiB', () => {
      expect(graphOf(oneNode({ id: 'a', type: 'transform', config: { expression: '$.a + 1' } })).nodes[0].config).toEqual({
        expression: '$.a + 1',
      });
      expect(graphOf(oneNode({ id: 'a', type: 'transform', config: { expression: 'x'.repeat(4096) } })).nodes).toHaveLength(1);
      for (const expression of ['', '   ', 'x'.repeat(4097), 'é'.repeat(2049)]) {
        expect(paths(issuesOf(oneNode({ id: 'a', type: 'transform', config: { expression } })))).toEqual(['nodes[0].config.expression']);
      }
    });

    it('code runs javascript from a non-empty source of at most 64 KiB, and defaults its limits', () => {
      expect(graphOf(oneNode({ id: 'a', type: 'code', config: { language: 'javascript', source: 'return 1' } })).nodes[0].config).toEqual({
        language: 'javascript',
        source: 'return 1',
        timeoutMs: 1_000,
        memoryMb: 32,
      });
      expect(
        graphOf(oneNode({ id: 'a', type: 'code', config: { language: 'javascript', source: 'x'.repeat(65_536) } })).nodes,
      ).toHaveLength(1);
      const codeIssues = (config: Record<string, unknown>) =>
        paths(issuesOf(oneNode({ id: 'a', type: 'code', config: { language: 'javascript', source: 'return 1', ...config } })));
      for (const source of ['', '  ', 'x'.repeat(65_537), 7]) expect(codeIssues({ source })).toEqual(['nodes[0].config.source']);
      for (const language of ['python', 'JavaScript', undefined]) expect(codeIssues({ language })).toEqual(['nodes[0].config.language']);
      for (const timeoutMs of [0, 10_001, 1.5]) expect(codeIssues({ timeoutMs })).toEqual(['nodes[0].config.timeoutMs']);
      for (const memoryMb of [0, 65, 2.5]) expect(codeIssues({ memoryMb })).toEqual(['nodes[0].config.memoryMb']);
    });

    it('http needs a method and an absolute http(s) URL, and defaults its timeout', () => {
      const node = graphOf(
        oneNode({
          id: 'a',
          type: 'http',
          config: { method: 'POST', url: 'https://api.example.com/orders', headers: { 'X-Trace': '1' }, body: { items: [1, null, 'x'] } },
        }),
      ).nodes[0];
      expect(node.config).toEqual({
        method: 'POST',
        url: 'https://api.example.com/orders',
        headers: { 'X-Trace': '1' },
        body: { items: [1, null, 'x'] },
        timeoutMs: 30_000,
      });
    });

    it.each([
      [{ method: 'TRACE', url: 'https://x.test' }, 'nodes[0].config.method'],
      [{ method: 'GET', url: 'ftp://x.test/file' }, 'nodes[0].config.url'],
      [{ method: 'GET', url: 'javascript:alert(1)' }, 'nodes[0].config.url'],
      [{ method: 'GET', url: '/relative' }, 'nodes[0].config.url'],
      [{ method: 'GET', url: 'https://x.test', headers: { 'X-A': 'ok\r\nX-Injected: 1' } }, 'nodes[0].config.headers["X-A"]'],
      [{ method: 'GET', url: 'https://x.test', timeoutMs: 0 }, 'nodes[0].config.timeoutMs'],
    ])('http rejects %j', (config, path) => {
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'http', config })))).toContain(path);
    });

    it('approval describes its action with any JSON and may name approvers', () => {
      const config = { action: { refund: { orderId: 'o-1', amount: 12.5 } }, approvers: ['alice'] };
      expect(graphOf(oneNode({ id: 'a', type: 'approval', config })).nodes[0].config).toEqual(config);
      expect(graphOf(oneNode({ id: 'a', type: 'approval' })).nodes[0].config).toEqual({});
    });

    it('fail is not retryable unless it says so', () => {
      expect(graphOf(oneNode({ id: 'a', type: 'fail' })).nodes[0].config).toEqual({ retryable: false });
      const config = { code: 'upstream_down', message: 'boom', retryable: true };
      expect(graphOf(oneNode({ id: 'a', type: 'fail', config })).nodes[0].config).toEqual(config);
    });
  });

  describe('join triggers', () => {
    it.each(['all_success', 'all_done', 'one_success'])('accepts %p', (trigger) => {
      expect(graphOf(oneNode({ id: 'a', type: 'noop', trigger })).nodes[0].trigger).toBe(trigger);
    });

    it('rejects anything else', () => {
      expect(paths(issuesOf(oneNode({ id: 'a', type: 'noop', trigger: 'any' })))).toEqual(['nodes[0].trigger']);
    });
  });

  describe('retry policies', () => {
    it('bound maxAttempts to 1..100, at node and workflow level', () => {
      expect(paths(issuesOf({ nodes: [{ id: 'a', type: 'noop', retry: { maxAttempts: 0 } }], retry: { maxAttempts: 101 } }))).toEqual([
        'nodes[0].retry.maxAttempts',
        'retry.maxAttempts',
      ]);
    });

    it('refuse a backoff coefficient below 1', () => {
      expect(paths(issuesOf({ nodes: [{ id: 'a', type: 'noop' }], retry: { backoffCoefficient: 0.5 } }))).toEqual([
        'retry.backoffCoefficient',
      ]);
    });

    it('refuse a maximum interval below the initial one', () => {
      expect(issuesOf({ nodes: [{ id: 'a', type: 'noop' }], retry: { initialIntervalMs: 5_000, maxIntervalMs: 1_000 } })).toEqual([
        { path: 'retry.maxIntervalMs', message: 'maxIntervalMs must be at least initialIntervalMs' },
      ]);
    });
  });

  describe('timeouts', () => {
    it('refuse a lease shorter than one second', () => {
      expect(paths(issuesOf({ nodes: [{ id: 'a', type: 'noop' }], timeouts: { leaseMs: 999 } }))).toEqual(['timeouts.leaseMs']);
    });

    it('refuse fractional or non-positive durations', () => {
      expect(paths(issuesOf({ nodes: [{ id: 'a', type: 'noop' }], timeouts: { queueMs: 1_500.5, executionMs: 0 } }))).toEqual([
        'timeouts.queueMs',
        'timeouts.executionMs',
      ]);
    });
  });

  describe('node timeoutMs', () => {
    it('is optional, absent by default, and bounds any node type to 1 ms .. one day', () => {
      expect(graphOf(oneNode({ id: 'a', type: 'noop' })).nodes[0]).not.toHaveProperty('timeoutMs');
      expect(graphOf(oneNode({ id: 'a', type: 'delay', config: { ms: 10 }, timeoutMs: 5 })).nodes[0].timeoutMs).toBe(5);
      expect(graphOf(oneNode({ id: 'a', type: 'fail', timeoutMs: 86_400_000 })).nodes[0].timeoutMs).toBe(86_400_000);
      for (const timeoutMs of [0, -1, 1.5, 86_400_001, '100']) {
        expect(paths(issuesOf(oneNode({ id: 'a', type: 'noop', timeoutMs })))).toEqual(['nodes[0].timeoutMs']);
      }
    });
  });

  it('parses a normalized graph to itself, so stored graphs can be validated again on read', () => {
    const graph = graphOf({
      nodes: [
        { id: 'a', type: 'http', config: { method: 'GET', url: 'https://x.test' } },
        { id: 'b', type: 'fail' },
      ],
      edges: [{ from: 'a', to: 'b' }],
    });
    expect(graphOf(JSON.parse(JSON.stringify(graph)))).toEqual(graph);
  });
});
