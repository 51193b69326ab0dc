import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start } from '../support/scenario.js';
import { type PolledTaskView as Polled, taskDiamond as diamond, untilEnded as ended } from '../support/task-diamond.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { historyOf } from '../live/live-scenario.js';

/**
 * Task nodes without a worker: root tasks go out with the start, and a completion may take the
 * next task of its queue in the same request. No Flostra worker runs in this app at all.
 */
describe('task nodes with no attempt, and complete-and-take-next', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: false });
    api = client(t.url);
    await publish(api, 'diamond-one', diamond('one'));
    await publish(api, 'diamond-pair', diamond('pair'));
    await publish(api, 'diamond-plain', diamond('plain'));
    await publish(api, 'diamond-bad', diamond('bad'));
    await publish(api, 'chain-own', {
      nodes: ['a', 'b'].map((id) => ({
        id,
        type: 'task',
        config: { queue: 'own', heartbeatTimeoutMs: 5_000 },
        retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
      })),
      edges: [{ from: 'a', to: 'b' }],
    });
  });
  afterAll(() => t?.close());

  const poll = (queue: string, workerId: string, waitMs: number) =>
    api.post<Polled>(`/v1/workspaces/ws-a/task-queues/${queue}/poll`, { token: TOKENS.taskWorkerA, body: { workerId, waitMs } });
  const complete = (task: Polled, workerId: string, extra: object = {}) =>
    api.post<{ status: string; next?: Polled | null }>(`/v1/tasks/${task.taskId}/complete`, {
      token: TOKENS.taskWorkerA,
      body: { workerId, fencingToken: task.fencingToken, outcome: 'succeeded', output: { node: task.nodeId }, ...extra },
    });
  const untilEnded = (executionId: string) => ended(api, executionId);

  it('runs a diamond of task nodes with no attempt, each completion handing out the next task', async () => {
    const { executionId } = await start(api, 'diamond-one', { input: { n: 1 } });
    const first = await poll('one', 'w-1', 5_000);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ executionId, nodeId: 'a' });

    const taken: string[] = [];
    let task: Polled | null = first.body;
    while (task !== null) {
      const done = await complete(task, 'w-1', { next: true });
      expect(done.status).toBe(200);
      expect(done.body.status).toBe('succeeded');
      expect(done.body).toHaveProperty('next');
      task = done.body.next ?? null;
      if (task !== null) taken.push(task.nodeId);
    }
    // b and c came with a's completion, d with the last of theirs; after d nothing was due.
    expect(taken.slice(0, 2).sort()).toEqual(['b', 'c']);
    expect(taken[2]).toBe('d');

    const ended = await untilEnded(executionId);
    expect(ended).toMatchObject({ status: 'succeeded', output: { d: { node: 'd' } }, attempts: [] });
    const history = await historyOf(api, executionId);
    expect(history.slice(0, 2).map((e) => e.type)).toEqual(['ExecutionStarted', 'TaskScheduled']);
    expect(history.filter((e) => e.type.startsWith('Attempt'))).toEqual([]);
  });

  it('takes the successor of its own execution in the completion’s append; that claim is exclusive and its lease expires as any', async () => {
    const { executionId } = await start(api, 'chain-own');
    const a = await poll('own', 'w-1', 5_000);
    expect(a.body).toMatchObject({ executionId, nodeId: 'a' });
    const done = await complete(a.body, 'w-1', { next: true });
    expect(done.status).toBe(200);
    const b = done.body.next!;
    expect(b).toMatchObject({ executionId, nodeId: 'b', attempt: 1, fencingToken: a.body.fencingToken + 1 });

    // One append: a's end, b's task and b's claim; the answer's position is the claim's.
    const history = await historyOf(api, executionId);
    const appended = history.slice(history.findIndex((e) => e.type === 'TaskSucceeded'));
    expect(appended.map((e) => e.type)).toEqual(['TaskSucceeded', 'NodeSucceeded', 'TaskScheduled', 'TaskClaimed']);
    expect((done.body as unknown as { position: string }).position).toBe(appended[3].position);

    // Handed out once: another worker finds nothing to take.
    expect((await poll('own', 'w-2', 0)).status).toBe(204);

    // w-1 goes quiet: the lease of the claim taken with the completion runs out, the watchdog retries b, w-2 takes it.
    t.clock.advance(6_000);
    const retried = await eventually(
      async () => {
        const res = await poll('own', 'w-2', 500);
        return res.status === 200 ? res.body : false;
      },
      { what: 'the retried task to be handed out' },
    );
    expect(retried).toMatchObject({ executionId, nodeId: 'b', attempt: 2 });
    const late = await complete(b, 'w-1');
    expect(late.status).toBe(409);
    expect((late.body as unknown as { code: string }).code).toBe('lease_expired');
    expect((await complete(retried, 'w-2', { next: true })).body).toMatchObject({ status: 'succeeded', next: null });
    expect(await untilEnded(executionId)).toMatchObject({ status: 'succeeded', output: { b: { node: 'b' } } });
  });

  it('answers without `next` when it was not asked for', async () => {
    const { executionId } = await start(api, 'diamond-plain');
    const a = await poll('plain', 'w-1', 5_000);
    const done = await complete(a.body, 'w-1');
    expect(done.status).toBe(200);
    expect(done.body).not.toHaveProperty('next');
    // b and c are still handed out by a plain poll.
    const b = await poll('plain', 'w-1', 5_000);
    expect(b.body).toMatchObject({ executionId });
    await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: {} });
  });

  it('refuses a malformed `next` with problem+json and records nothing', async () => {
    const { executionId } = await start(api, 'diamond-bad');
    const a = await poll('bad', 'w-1', 5_000);
    expect(a.body.executionId).toBe(executionId);
    const before = await historyOf(api, executionId);
    const refused = await complete(a.body, 'w-1', { next: 'yes' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect((refused.body as unknown as { code: string }).code).toBe('validation_failed');
    expect(await historyOf(api, executionId)).toEqual(before);
    await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: {} });
  });

  it('two workers completing and taking the next: each task is handed out once, every execution ends', async () => {
    const executions = await Promise.all(Array.from({ length: 12 }, () => start(api, 'diamond-pair').then((s) => s.executionId)));
    const handedTo = new Map<string, string[]>();
    let completed = 0;
    let stop = false;
    const worker = async (workerId: string) => {
      let task: Polled | null = null;
      while (!stop) {
        if (task === null) {
          const res = await poll('pair', workerId, 500);
          if (res.status === 204) continue;
          expect(res.status).toBe(200);
          task = res.body;
        }
        handedTo.set(task.taskId, [...(handedTo.get(task.taskId) ?? []), workerId]);
        const done = await complete(task, workerId, { next: true });
        expect(done.status).toBe(200);
        completed++;
        task = done.body.next ?? null;
      }
      // A task taken with the last completion is this worker's: finish it too.
      if (task !== null) {
        handedTo.set(task.taskId, [...(handedTo.get(task.taskId) ?? []), workerId]);
        expect((await complete(task, workerId)).status).toBe(200);
        completed++;
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
});
