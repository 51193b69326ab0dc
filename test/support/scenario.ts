import { expect } from '@jest/globals';
import type { ApiClient } from './http-client.js';
import { TOKENS } from './test-app.js';

/** A three-node chain with the given timeouts/retry: enough graph for the execution core. */
export function chainWorkflow(overrides: Record<string, unknown> = {}) {
  return {
    nodes: [
      { id: 'a', type: 'noop' },
      { id: 'b', type: 'noop' },
      { id: 'c', type: 'noop' },
    ],
    edges: [
      { from: 'a', to: 'b' },
      { from: 'b', to: 'c' },
    ],
    ...overrides,
  };
}

export async function publish(api: ApiClient, name: string, graph = chainWorkflow(), workspace = 'ws-a') {
  const res = await api.put(`/v1/workspaces/${workspace}/workflows/${name}`, { token: TOKENS.adminA, body: graph });
  expect([200, 201]).toContain(res.status);
  return res.body as { workflowId: string; revision: number; digest: string };
}

export async function start(api: ApiClient, name: string, options: { key?: string; input?: object } = {}) {
  const res = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, {
    token: TOKENS.operatorA,
    body: { input: options.input ?? {} },
    headers: options.key ? { 'idempotency-key': options.key } : {},
  });
  expect(res.status).toBe(201);
  const view = await api.get(`/v1/executions/${res.body.executionId}`, { token: TOKENS.viewerA });
  return { executionId: res.body.executionId as string, attemptId: view.body.attempts.at(-1)?.attemptId as string, start: res.body };
}

export async function claim(api: ApiClient, executionId: string, attemptId: string, workerId = 'worker-1') {
  return api.post(`/v1/executions/${executionId}/attempts/${attemptId}/claim`, { token: TOKENS.worker, body: { workerId } });
}

export async function view(api: ApiClient, executionId: string) {
  const res = await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA });
  expect(res.status).toBe(200);
  return res.body;
}
