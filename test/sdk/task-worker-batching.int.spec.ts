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
    start(concurrency, (_input, ctx) => {
      contexts.push(ctx);
      return new Promise((resolve) => releases.push(resolve));
    });
    return { contexts, releaseAll: (value: unknown) => releases.splice(0).forEach((release) => release(value)) };
  }

  function start(concurrency: number, handler: TaskHandler): void {
    const silent = () => undefined;
    const { url, token, workspace, queueName: queue } = double;
    worker = createTaskWorker({
      ...{ url, token, workspace, queue, handler, concurrency },
      workerId: 'sdk-batch',
      pollWaitMs: 1_000,
      handleSignals: false,
      logger: { debug: silent, info: silent, warn: (message: string) => warnings.push(message), error: silent },
    }).start();
  }

  /** Runs tasks whose input is listed in `gates` until the test opens their gate; others end at once. Counts the handlers running. */
  function byInput(concurrency: number, gates: string[]) {
    const open = new Map<string, () => void>();
    const started: string[] = [];
    const stats = { running: 0, most: 0 };
    start(concurrency, async (input) => {
      started.push(String(input));
      stats.most = Math.max(stats.most, ++stats.running);
      if (gates.includes(String(input))) await new Promise<void>((resolve) => open.set(String(input), resolve));
      stats.running--;
      return input;
    });
    return { started, stats, release: (input: string) => open.get(input)?.() };
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

  it('takes a completed task’s successors for the slots waiting in a poll, and sends their completions together', async () => {
    const a = double.enqueue('a');
    double.scheduleAfter(a.taskId, ['b', 'c']);
    const w = byInput(3, ['a']);
    await eventually(() => w.started.includes('a') && double.pollsWaiting === 1, 'a running, the other slots polling');
    const polls = double.callsOf('poll').length;

    w.release('a');
    await eventually(() => double.batchBodies.length >= 2, 'the completions of a, then of b and c');
    // One slot completed a; the two waiting in the open poll count too.
    expect(double.batchBodies[0]).toMatchObject({ completions: [{ taskId: a.taskId }], next: 3 });
    expect(w.started.slice(1).sort()).toEqual(['b', 'c']);
    const siblings = (double.batchBodies[1].completions as Array<{ output: unknown }>).map((c) => c.output).sort();
    expect(siblings).toEqual(['b', 'c']);
    expect(double.callsOf('poll').length).toBe(polls);
  });

  /**
   * Two slots: a runs on one while the other waits in a poll; a's completion takes b and c (its
   * successors), b for a's slot, c for the waiting one. The poll stays open with no slot waiting
   * in it, and a task queued now (`late`) comes back with it: one more than the worker can run.
   */
  async function oneTooMany() {
    const a = double.enqueue('a');
    double.scheduleAfter(a.taskId, ['b', 'c']);
    const w = byInput(2, ['a', 'b', 'c']);
    await eventually(() => w.started.includes('a') && double.pollsWaiting === 1, 'a running, the other slot polling');
    w.release('a');
    await eventually(() => w.started.length === 3, 'b and c running');
    expect(double.pollsWaiting).toBe(1);
    return { w, late: double.enqueue('late', { heartbeatIntervalMs: 20 }) };
  }

  it('holds a task its open poll brings once that poll’s slot was served otherwise, heartbeating it until a slot is free', async () => {
    const { w, late } = await oneTooMany();
    await eventually(() => double.task(late.taskId).workerId === 'sdk-batch', 'the open poll to bring the late task');
    await eventually(() => double.callsOf('heartbeat', late.taskId).length >= 2, 'the held task heartbeated');
    expect(w.started).not.toContain('late');
    expect(worker!.activeTasks).toBe(2);

    w.release('b');
    await eventually(() => double.task(late.taskId).completion !== null, 'the held task run once b ended');
    expect(w.stats.most).toBe(2);
    w.release('c');
    await eventually(() => double.task(late.taskId).completion !== null && double.callsOf('complete').length === 4, 'every completion');
    for (const call of double.callsOf('heartbeat', late.taskId)) expect(call.status).toBe(200);
  });

  it('drops a held task that lost its lease, without running it', async () => {
    const { w, late } = await oneTooMany();
    await eventually(() => double.callsOf('heartbeat', late.taskId).length >= 1, 'the held task heartbeated');
    double.loseLease(late.taskId, 'lease_expired');
    await eventually(() => warnings.includes('held task lost its lease before it ran: dropping it'), 'the held task dropped');
    w.release('b');
    w.release('c');
    await eventually(() => worker!.activeTasks === 0 && double.callsOf('complete').length === 3, 'b and c completed');
    expect(w.started).not.toContain('late');
  });
});
