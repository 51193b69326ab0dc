import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { historyOf } from '../live/live-scenario.js';
import { SseStream } from '../live/sse-test-client.js';

/** ship → notify, two task nodes: the worker asks for ship's task, the control plane for notify's. */
const SHIPPING = {
  nodes: [
    { id: 'ship', type: 'task', config: { queue: 'shipping' } },
    { id: 'notify', type: 'task', config: { queue: 'shipping' } },
  ],
  edges: [{ from: 'ship', to: 'notify' }],
};

type TaskData = { taskId?: string };

describe('the life of each task over SSE', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: true });
    api = client(t.url);
    await publish(api, 'shipping', SHIPPING);
  });
  afterAll(() => t?.close());

  const poll = async () => {
    const res = await api.post('/v1/workspaces/ws-a/task-queues/shipping/poll', {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'poller-1', waitMs: 5_000 },
    });
    expect(res.status).toBe(200);
    return res.body as { taskId: string; fencingToken: number };
  };
  const call = async (task: { taskId: string; fencingToken: number }, verb: 'heartbeat' | 'complete', body: object = {}) => {
    const res = await api.post(`/v1/tasks/${task.taskId}/${verb}`, {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'poller-1', fencingToken: task.fencingToken, ...body },
    });
    expect(res.status).toBe(200);
  };
  /** The task events a stream delivered, as `<type>:<node of the task>`. */
  const taskLife = (stream: SseStream) =>
    stream.messages
      .filter((m) => m.event.startsWith('Task'))
      .map((m) => `${m.event}:${((JSON.parse(m.data) as { data: TaskData }).data.taskId ?? '').split('.')[1]}`);

  it('shows a client each task scheduled, claimed, heartbeated and completed as it happens, and again after Last-Event-ID', async () => {
    const { executionId } = await start(api, 'shipping', { input: { parcel: 7 } });
    const stream = await SseStream.open(`${t.url}/v1/executions/${executionId}/events`, { token: TOKENS.viewerA });
    const has = (entry: string) => stream.until((s) => taskLife(s).includes(entry), entry);

    const ship = await poll();
    // Each step is on the stream before the next one is taken: live, not read back at the end.
    await has('TaskClaimed:ship');
    await call(ship, 'heartbeat', { progress: { packed: true } });
    await has('TaskLeaseExtended:ship');
    await call(ship, 'complete', { outcome: 'succeeded', output: { tracking: 'T-1' } });
    await has('TaskScheduled:notify');
    const notify = await poll();
    await has('TaskClaimed:notify');
    await call(notify, 'complete', { outcome: 'succeeded', output: null });
    await stream.until((s) => s.messages.some((m) => m.event === 'ExecutionSucceeded'), 'the end');
    stream.close();

    expect(taskLife(stream)).toEqual([
      'TaskScheduled:ship',
      'TaskClaimed:ship',
      'TaskLeaseExtended:ship',
      'TaskSucceeded:ship',
      'TaskScheduled:notify',
      'TaskClaimed:notify',
      'TaskSucceeded:notify',
    ]);
    const history = await historyOf(api, executionId);
    expect(stream.ids).toEqual(history.map((e) => e.position));
    // No attempt at all: ship's task came with the start, notify's with the end of ship's.
    expect(history.filter((e) => e.type === 'AttemptScheduled')).toHaveLength(0);
    expect(history.slice(0, 2).map((e) => e.type)).toEqual(['ExecutionStarted', 'TaskScheduled']);

    // A client that saw up to ship's claim resumes strictly after it and misses none of the rest.
    const claimed = stream.messages.find((m) => m.event === 'TaskClaimed')!;
    const resumed = await SseStream.open(`${t.url}/v1/executions/${executionId}/events`, {
      token: TOKENS.viewerA,
      lastEventId: claimed.id,
    });
    const rest = history.slice(history.findIndex((e) => e.position === claimed.id) + 1);
    await resumed.until((s) => s.messages.length >= rest.length, 'the events after the claim');
    resumed.close();
    expect(resumed.ids).toEqual(rest.map((e) => e.position));
    expect(taskLife(resumed)).toEqual(taskLife(stream).slice(2));
  });
});
