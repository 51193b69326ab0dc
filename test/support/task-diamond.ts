import { eventually } from './eventually.js';
import type { ApiClient } from './http-client.js';
import { view } from './scenario.js';

/** A diamond of four task nodes (a → b, a → c, b + c → d) on one queue. */
export const taskDiamond = (queue: string) => ({
  nodes: ['a', 'b', 'c', 'd'].map((id) => ({ id, type: 'task', config: { queue } })),
  edges: [
    { from: 'a', to: 'b' },
    { from: 'a', to: 'c' },
    { from: 'b', to: 'd' },
    { from: 'c', to: 'd' },
  ],
});

/** A task as the poll hands it out (the fields the task tests read). */
export interface PolledTaskView {
  taskId: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  fencingToken: number;
}

/** The execution's view once it ended. */
export const untilEnded = (api: ApiClient, executionId: string) =>
  eventually(
    async () => {
      const v = await view(api, executionId);
      return ['succeeded', 'failed', 'cancelled', 'timed_out'].includes(v.status) && v;
    },
    { what: `execution ${executionId} to end` },
  );
