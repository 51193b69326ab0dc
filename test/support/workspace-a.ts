import { expect } from '@jest/globals';
import { eventually } from './eventually.js';
import type { ApiClient } from './http-client.js';
import { TOKENS } from './test-app.js';

export type HistoryEvent = { type: string; position: string; data: Record<string, unknown> };

/** Executions of workspace `ws-a` of the test app at `api`, as its admin, operator and viewer see them. */
export function workspaceA(api: ApiClient) {
  return {
    /** Publishes `graph` as workflow `name` and starts it; the new execution's id. */
    async publishAndStart(name: string, graph: object, input: object = {}): Promise<string> {
      const put = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
      expect([200, 201]).toContain(put.status);
      const started = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: { input } });
      expect(started.status).toBe(201);
      return started.body.executionId as string;
    },

    async history(executionId: string): Promise<HistoryEvent[]> {
      return (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
    },

    /** The execution's view once its status is one of `statuses`. */
    untilStatus(executionId: string, statuses: string[]) {
      return eventually(
        async () => {
          const view = await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA });
          return statuses.includes(view.body.status) ? view.body : false;
        },
        `execution ${executionId} to reach ${statuses.join('|')}`,
      );
    },
  };
}
