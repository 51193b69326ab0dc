import { describe, expect, it } from '@jest/globals';
import type { ExecutionView } from './api-types.js';
import { describeExecution } from './program.js';

const base: ExecutionView = {
  executionId: '3f1c2a9e-0000-4000-8000-000000000001',
  workspaceId: 'ws-a',
  workflow: { workflowId: 'w', name: 'order', revision: 1, digest: 'd' },
  workflowRevision: 1,
  status: 'succeeded',
  waitingFor: null,
  scheduledBy: null,
  cancelRequested: false,
  startedAt: '2030-01-01T00:00:00.000Z',
  updatedAt: '2030-01-01T00:00:01.000Z',
  endedAt: '2030-01-01T00:00:01.000Z',
  input: {},
  output: null,
  error: null,
  pendingApproval: null,
  attempts: [],
  nodes: [],
  position: '1',
} as ExecutionView;

describe('flostra executions get', () => {
  it('shows the parent of a child, and the children of a parent', () => {
    const child = describeExecution({ ...base, parent: { executionId: 'p-1', nodeId: 'bill', depth: 1 }, children: [] });
    expect(child).toMatch(/parent:\s+p-1 \(node bill, depth 1\)/);
    const parent = describeExecution({
      ...base,
      parent: null,
      children: [{ executionId: 'c-1', nodeId: 'bill', workflow: 'invoice', status: 'succeeded' }],
    });
    expect(parent).not.toMatch(/^parent/m);
    expect(parent).toMatch(/CHILD\s+NODE\s+WORKFLOW\s+STATUS\n.*c-1\s+bill\s+invoice\s+succeeded/);
  });

  it('shows neither for a server that does not report them', () => {
    expect(describeExecution(base)).not.toMatch(/parent|CHILD/);
  });
});
