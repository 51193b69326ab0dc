import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start } from '../support/scenario.js';
import { type PolledTaskView as Polled, taskDiamond as diamond, untilEnded as ended } from '../support/task-diamond.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { historyOf } from '../live/live-scenario.js';

type Result = { taskId: string; status?: string; position?: string; problem?: { code: string; status: number } };

/** Several tasks per request: a poll with `max`, and the batch completion route (one append per execution). */
describe('taking and completing several tasks per request', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: false });
    api = client(t.url);
    await publish(api, 'batch-diamond', diamond('batch'));
    await publish(api, 'batch-items', diamond('items'));
    await publish(api, 'batch-pair', diamond('pair2'));
    await publish(api, 'batch-lease', {
      nodes: ['only'].map((id) => ({
        id,
        type: 'task',
        config: { queue: 'leases', heartbeatTimeoutMs: 5_000 },
        retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
      })),
      edges: [],
    });
  });
  afterAll(() => t?.close());

  const pollMany = (queue: string, workerId: string, max: number, waitMs = 5_000) =>
    api.post<{ tasks: Polled[] }>(`/v1/workspaces/ws-a/task-queues/${queue}/poll`, {
      token: TOKENS.taskWorkerA,
      body: { workerId, waitMs, max },
    });
  const item = (task: Polled, workerId: string, extra: object = {}) => ({
    taskId: task.taskId,
    workerId,
    fencingToken: task.fencingToken,
    outcome: 'succeeded',
    output: { node: task.nodeId },
    ...extra,
  });
  const completeAll = (completions: object[], next = 0) =>
    api.post<{ results: Result[]; next: Polled[] }>('/v1/tasks/complete', { token: TOKENS.taskWorkerA, body: { completions, next } });
  const untilEnded = (executionId: string) => ended(api, executionId);

  it('takes both branches with the first completion, and records the branches’ ends in one append that takes the join', async () => {
    const { executionId } = await start(api, 'batch-diamond', { input: { n: 1 } });
    const first = await pollMany('batch', 'w-1', 10);
    expect(first.status).toBe(200);
    expect(first.body.tasks.map((task) => task.nodeId)).toEqual(['a']);

    const afterA = await completeAll([item(first.body.tasks[0], 'w-1')], 5);
    expect(afterA.status).toBe(200);
    expect(afterA.body.results).toEqual([{ taskId: first.body.tasks[0].taskId, status: 'succeeded', position: expect.any(String) }]);
    const [b, c] = afterA.body.next;
    expect([b.nodeId, c.nodeId].sort()).toEqual(['b', 'c']);
    expect(c.fencingToken).toBe(b.fencingToken + 1);

    const branches = await completeAll([item(b, 'w-1'), item(c, 'w-1')], 5);
    expect(branches.status).toBe(200);
    expect(branches.body.results.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect(branches.body.next.map((task) => task.nodeId)).toEqual(['d']);
    // One append: both ends, the join's task and its claim; both items answer its position.
    const history = await historyOf(api, executionId);
    const appended = history.slice(history.findIndex((e) => e.type === 'TaskSucceeded' && e.position > afterA.body.results[0].position!));
    expect(appended.map((e) => e.type)).toEqual([
      'TaskSucceeded',
      'NodeSucceeded',
      'TaskSucceeded',
      'NodeSucceeded',
      'TaskScheduled',
      'TaskClaimed',
    ]);
    expect(branches.body.results.map((r) => r.position)).toEqual([appended[5].position, appended[5].position]);

    expect((await completeAll([item(branches.body.next[0], 'w-1')], 5)).body.next).toEqual([]);
    expect(await untilEnded(executionId)).toMatchObject({ status: 'succeeded', output: { d: { node: 'd' } } });
  });

  it('answers each completion on its own: a stale one and an unknown one are refused, the good one is recorded', async () => {
    const { executionId } = await start(api, 'batch-items');
    const [a] = (await pollMany('items', 'w-1', 1)).body.tasks;
    const [b, c] = (await completeAll([item(a, 'w-1')], 2)).body.next;
    const refused = await completeAll([
      item(b, 'w-1', { fencingToken: b.fencingToken - 1 }),
      item(c, 'w-1'),
      { ...item(c, 'w-1'), taskId: 'nope' },
    ]);
    expect(refused.status).toBe(200);
    expect(refused.body.results.map((r) => r.problem?.code ?? r.status)).toEqual(['stale_attempt', 'succeeded', 'not_found']);
    expect(refused.body.results[0].problem).toMatchObject({ status: 409, type: 'urn:flostra:problem:stale_attempt' });
    // b is still w-1's: its own completion goes through.
    expect((await completeAll([item(b, 'w-1')])).body.results[0].status).toBe('succeeded');

    const before = await historyOf(api, executionId);
    for (const body of [
      { completions: [] },
      { completions: [{ taskId: b.taskId, outcome: 'succeeded' }] },
      { completions: [item(b, 'w-1')], next: 101 },
    ]) {
      const bad = await api.post<{ code: string }>('/v1/tasks/complete', { token: TOKENS.taskWorkerA, body });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('validation_failed');
    }
    expect(await historyOf(api, executionId)).toEqual(before);
    await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: {} });
  });

  it('answers an old client’s poll in today’s form, and `max` in the list form (empty after the wait)', async () => {
    const single = await api.post('/v1/workspaces/ws-a/task-queues/empty/poll', {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'w-1', waitMs: 0 },
    });
    expect(single.status).toBe(204);
    expect((await pollMany('empty', 'w-1', 3, 0)).body).toEqual({ tasks: [] });
    expect((await pollMany('empty', 'w-1', 101, 0)).status).toBe(400);
  });

  it('two workers taking several tasks at once and completing them in batches: each task is handed out once', async () => {
    const executions = await Promise.all(Array.from({ length: 10 }, () => start(api, 'batch-pair').then((s) => s.executionId)));
    const handedTo = new Map<string, string[]>();
    let completed = 0;
    let stop = false;
    const worker = async (workerId: string) => {
      let held: Polled[] = [];
      while (!stop || held.length > 0) {
        if (held.length === 0) {
          held = (await pollMany('pair2', workerId, 4, 200)).body.tasks;
          continue;
        }
        for (const task of held) handedTo.set(task.taskId, [...(handedTo.get(task.taskId) ?? []), workerId]);
        const done = await completeAll(
          held.map((task) => item(task, workerId)),
          stop ? 0 : 4,
        );
        expect(done.body.results.every((r) => r.status === 'succeeded')).toBe(true);
        completed += held.length;
        held = done.body.next;
      }
    };
    const workers = [worker('w-1'), worker('w-2')];
    try {
      await eventually(() => completed >= executions.length * 4, { what: () => `every task completed (${completed} so far)` });
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    expect(handedTo.size).toBe(executions.length * 4);
    expect([...handedTo.values()].filter((owners) => owners.length !== 1)).toEqual([]);
    for (const executionId of executions) expect((await untilEnded(executionId)).status).toBe('succeeded');
  });

  it('keeps a lease per claimed task: one kept alive stays, the others expire and are handed out again', async () => {
    const executions = await Promise.all(Array.from({ length: 3 }, () => start(api, 'batch-lease').then((s) => s.executionId)));
    const taken = await eventually(
      async () => {
        const res = await pollMany('leases', 'w-1', 3, 0);
        return res.body.tasks.length === 3 && res.body.tasks;
      },
      { what: 'three tasks in one poll' },
    );
    expect(new Set(taken.map((task) => task.executionId))).toEqual(new Set(executions));
    const [kept, ...lost] = taken;
    t.clock.advance(3_000);
    const beat = await api.post(`/v1/tasks/${kept.taskId}/heartbeat`, {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'w-1', fencingToken: kept.fencingToken },
    });
    expect(beat.status).toBe(200);
    t.clock.advance(3_000);
    const retried = await eventually(
      async () => {
        const res = await pollMany('leases', 'w-2', 5, 200);
        return res.body.tasks.length > 0 && res.body.tasks;
      },
      { what: 'the expired tasks to be handed out again' },
    );
    const all = [...retried];
    if (all.length < 2) all.push(...(await pollMany('leases', 'w-2', 5, 2_000)).body.tasks);
    expect(all.map((task) => [task.executionId, task.attempt]).sort()).toEqual(lost.map((task) => [task.executionId, 2]).sort());

    const late = await completeAll([item(kept, 'w-1'), ...lost.map((task) => item(task, 'w-1'))]);
    expect(late.body.results.map((r) => r.problem?.code ?? r.status)).toEqual(['succeeded', 'lease_expired', 'lease_expired']);
    expect((await completeAll(all.map((task) => item(task, 'w-2')))).body.results.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    for (const executionId of executions) expect((await untilEnded(executionId)).status).toBe('succeeded');
  });
});
