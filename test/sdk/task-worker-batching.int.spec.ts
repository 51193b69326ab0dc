import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTaskWorker, type TaskContext, type TaskHandler, type TaskWorker } from '../../src/sdk/worker.js';
import { eventually } from '../support/eventually.js';
import { TaskQueueDouble } from '../support/task-queue-double.js';

/** The worker SDK's shared requests, against the loopback double: several tasks per poll, several completions per request. */
describe('createTaskWorker with several free slots', () => {
  let double: TaskQueueDouble;
  let worker: TaskWorker | null = null;
  const warnings: string[] = [];

  beforeEach(async () => {
    warnings.length = 0;
    double = new TaskQueueDouble();
    double.listForm = true;
    await double.start();
  });
  afterEach(async () => {
    await worker?.stop({ timeoutMs: 0 });
    worker = null;
    await double.stop();
  });

  function gated(concurrency: number) {
    const contexts: TaskContext[] = [];
    const releases: Array<(value: unknown) => void> = [];
    const handler: TaskHandler = (_input, ctx) => {
      contexts.push(ctx);
      return new Promise((resolve) => releases.push(resolve));
    };
    const silent = () => undefined;
    const { url, token, workspace, queueName: queue } = double;
    worker = createTaskWorker({
      ...{ url, token, workspace, queue, handler, concurrency },
      workerId: 'sdk-batch',
      pollWaitMs: 1_000,
      handleSignals: false,
      logger: { debug: silent, info: silent, warn: (message: string) => warnings.push(message), error: silent },
    }).start();
    return { contexts, releaseAll: (value: unknown) => releases.splice(0).forEach((release) => release(value)) };
  }

  it('takes as many tasks as it has free slots in one poll, and sends the completions of one turn in one request', async () => {
    const tasks = Array.from({ length: 4 }, (_, i) => double.enqueue(i));
    const g = gated(4);
    await eventually(() => g.contexts.length === 4, 'four handlers to run');
    expect(double.callsOf('poll').map((c) => c.body.max)).toEqual([4]);

    g.releaseAll('done');
    await eventually(() => tasks.every((t) => double.task(t.taskId).completion !== null), 'every completion');
    expect(double.batches).toBe(1);
    for (const t of tasks)
      expect(double.task(t.taskId).completion).toEqual({ workerId: 'sdk-batch', fencingToken: 1, outcome: 'succeeded', output: 'done' });
  });

  it('answers each completion of a batch on its own: a refused one is not reported again, the others are recorded', async () => {
    const tasks = Array.from({ length: 3 }, (_, i) => double.enqueue(i));
    const g = gated(3);
    await eventually(() => g.contexts.length === 3, 'three handlers to run');
    double.loseLease(tasks[1].taskId, 'lease_expired');
    g.releaseAll('done');
    await eventually(
      () => double.task(tasks[0].taskId).completion !== null && double.task(tasks[2].taskId).completion !== null,
      'the good completions',
    );
    await eventually(() => warnings.includes('completion refused: the task is no longer this worker’s'), 'the refusal logged');
    expect(double.callsOf('complete', tasks[1].taskId)).toHaveLength(1);
    expect(double.task(tasks[1].taskId).completion).toBeNull();
  });

  it('takes the next tasks with a batch of completions, one per completion', async () => {
    const first = Array.from({ length: 2 }, (_, i) => double.enqueue(`first-${i}`));
    const g = gated(2);
    await eventually(() => g.contexts.length === 2, 'two handlers');
    const second = Array.from({ length: 2 }, (_, i) => double.enqueue(`second-${i}`));
    const polls = double.callsOf('poll').length;
    g.releaseAll('done');
    await eventually(() => g.contexts.length === 4, 'the next two, taken with the completions');
    expect(
      g.contexts
        .slice(2)
        .map((c) => c.taskId)
        .sort(),
    ).toEqual(second.map((t) => t.taskId).sort());
    expect(double.callsOf('poll').length).toBe(polls);
    expect(first.every((t) => double.task(t.taskId).completion !== null)).toBe(true);
    g.releaseAll('done');
  });
});
