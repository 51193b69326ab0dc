import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createTaskWorker,
  LeaseLostError,
  NonRetryableError,
  RetryableError,
  TaskCancelledError,
  WorkerShutdownError,
  type TaskContext,
  type TaskHandler,
  type TaskWorker,
  type TaskWorkerOptions,
} from '../../src/sdk/worker.js';
import { eventually } from '../support/eventually.js';
import { TaskQueueDouble } from '../support/task-queue-double.js';

/** The worker SDK against a loopback double of the task-queue protocol: what it sends, and when it gives up. */
describe('createTaskWorker', () => {
  let double: TaskQueueDouble;
  let worker: TaskWorker | null = null;
  const logs: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = [];
  const logger = {
    debug: (message: string, fields?: Record<string, unknown>) => logs.push({ level: 'debug', message, fields }),
    info: (message: string, fields?: Record<string, unknown>) => logs.push({ level: 'info', message, fields }),
    warn: (message: string, fields?: Record<string, unknown>) => logs.push({ level: 'warn', message, fields }),
    error: (message: string, fields?: Record<string, unknown>) => logs.push({ level: 'error', message, fields }),
  };

  beforeEach(async () => {
    logs.length = 0;
    double = new TaskQueueDouble();
    await double.start();
  });
  afterEach(async () => {
    await worker?.stop({ timeoutMs: 0 });
    worker = null;
    await double.stop();
  });

  function startWorker<Input>(handler: TaskHandler<Input>, options: Partial<TaskWorkerOptions<Input>> = {}): TaskWorker {
    worker = createTaskWorker({
      url: double.url,
      token: double.token,
      workspace: double.workspace,
      queue: double.queueName,
      handler,
      workerId: 'sdk-test',
      pollWaitMs: 1_000,
      handleSignals: false,
      backoff: { initialMs: 10, maxMs: 50 },
      logger,
      ...options,
    }).start();
    return worker;
  }

  /** A handler that waits until the test lets it go: `release(value)` returns, `release(error)` throws. */
  function gate() {
    const contexts: TaskContext[] = [];
    const releases: Array<(value: unknown) => void> = [];
    const handler: TaskHandler = (_input, ctx) => {
      contexts.push(ctx);
      return new Promise((resolve, reject) => releases.push((value) => (value instanceof Error ? reject(value) : resolve(value))));
    };
    return { handler, contexts, release: (index: number, value: unknown) => releases[index](value) };
  }

  const completionOf = (taskId: string) => eventually(() => double.task(taskId).completion ?? false, `task ${taskId} to be completed`);

  it('runs a task with its input and context, heartbeats while it runs, and completes it with the output', async () => {
    const g = gate();
    startWorker(g.handler);
    const task = double.enqueue({ width: 640 }, { heartbeatIntervalMs: 30, attempt: 2, nodeId: 'thumb' });
    await eventually(() => g.contexts.length === 1, 'the handler to run');
    const ctx = g.contexts[0];
    expect({ ...ctx, signal: undefined, heartbeat: undefined }).toEqual({
      taskId: task.taskId,
      executionId: task.executionId,
      nodeId: 'thumb',
      attempt: 2,
      workerId: 'sdk-test',
      signal: undefined,
      heartbeat: undefined,
    });
    await eventually(() => double.callsOf('heartbeat', task.taskId).length >= 3, 'three automatic heartbeats');
    expect(double.callsOf('heartbeat', task.taskId)[0].body).toEqual({ workerId: 'sdk-test', fencingToken: 1 });

    const answer = await ctx.heartbeat({ done: 0.5 });
    expect(answer.cancelRequested).toBe(false);
    expect(double.callsOf('heartbeat', task.taskId).some((c) => c.body.progress?.done === 0.5)).toBe(true);

    g.release(0, { url: 'thumb.png' });
    expect(await completionOf(task.taskId)).toEqual({
      workerId: 'sdk-test',
      fencingToken: 1,
      outcome: 'succeeded',
      output: { url: 'thumb.png' },
      next: true,
    });
    expect(ctx.signal.aborted).toBe(false);
    // No heartbeat once the completion was acknowledged.
    const beats = double.callsOf('heartbeat', task.taskId).length;
    double.enqueue('next');
    await eventually(() => g.contexts.length === 2, 'the next task');
    expect(double.callsOf('heartbeat', task.taskId)).toHaveLength(beats);
  });

  it('takes the next task with each completion, and polls only when a completion brought none', async () => {
    const g = gate();
    startWorker(g.handler);
    const first = double.enqueue('first');
    await eventually(() => g.contexts.length === 1, 'the first task');
    const second = double.enqueue('second');
    const third = double.enqueue('third');
    const polls = double.callsOf('poll').length;
    g.release(0, 1);
    await eventually(() => g.contexts.length === 2, 'the second task, from the first completion');
    expect(g.contexts[1].taskId).toBe(second.taskId);
    g.release(1, 2);
    await eventually(() => g.contexts.length === 3, 'the third task, from the second completion');
    expect(g.contexts[2].taskId).toBe(third.taskId);
    expect(double.callsOf('poll')).toHaveLength(polls);
    g.release(2, 3);
    expect(await completionOf(third.taskId)).toMatchObject({ outcome: 'succeeded', output: 3, next: true });
    // The last completion brought nothing: the slot polls again.
    await eventually(() => double.callsOf('poll').length > polls, 'a poll once the queue is empty');
    expect([first, second, third].map((t) => double.task(t.taskId).completion?.output)).toEqual([1, 2, 3]);
  });

  it('reports RetryableError, NonRetryableError and plain errors as they say', async () => {
    const failures: Record<string, unknown> = {
      retryable: new RetryableError('upstream_busy', 'try later'),
      fatal: new NonRetryableError('bad_image', 'not a PNG'),
      plain: new Error('disk full'),
      thrownString: 'just a string',
    };
    startWorker((input: string) => {
      throw failures[input];
    });
    const tasks = Object.keys(failures).map((name) => [name, double.enqueue(name)] as const);
    const errors = Object.fromEntries(await Promise.all(tasks.map(async ([name, t]) => [name, (await completionOf(t.taskId)).error])));
    expect(errors).toEqual({
      retryable: { code: 'upstream_busy', message: 'try later', retryable: true },
      fatal: { code: 'bad_image', message: 'not a PNG', retryable: false },
      plain: { code: 'task_error', message: 'disk full', retryable: true },
      thrownString: { code: 'task_error', message: 'just a string', retryable: true },
    });
    for (const [, t] of tasks) expect(double.task(t.taskId).completion!.outcome).toBe('failed');
  });

  it('aborts the handler when a heartbeat answers cancelRequested, and reports nothing for the task', async () => {
    let reason: unknown = null;
    startWorker(
      (_input, ctx) =>
        new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            reject(new Error('aborted by the signal'));
          }),
        ),
    );
    const task = double.enqueue('long', { heartbeatIntervalMs: 30 });
    await eventually(() => double.callsOf('heartbeat', task.taskId).length >= 1, 'a first heartbeat');
    expect(reason).toBeNull();
    double.cancel(task.taskId);
    await eventually(() => worker!.activeTasks === 0, 'the handler to end');
    expect(reason).toBeInstanceOf(TaskCancelledError);
    // The task ended with its execution: a completion would be refused, so none is sent.
    expect(double.callsOf('complete', task.taskId)).toEqual([]);
    expect(logs.some((l) => l.message === 'task cancelled: its result is not reported')).toBe(true);
  });

  it.each(['lease_expired', 'stale_attempt'] as const)(
    'aborts the handler when a heartbeat answers 409 %s, and reports nothing for the task',
    async (code) => {
      let reason: unknown = null;
      startWorker(
        (_input, ctx) =>
          new Promise((resolve) =>
            ctx.signal.addEventListener('abort', () => {
              reason = ctx.signal.reason;
              resolve('finished anyway');
            }),
          ),
      );
      const task = double.enqueue('long', { heartbeatIntervalMs: 30 });
      await eventually(() => double.callsOf('heartbeat', task.taskId).length >= 1, 'a first heartbeat');
      double.loseLease(task.taskId, code);
      await eventually(() => reason !== null, 'the signal to fire');
      expect(reason).toBeInstanceOf(LeaseLostError);
      expect((reason as LeaseLostError).code).toBe(code);
      // The worker moves on to the next task without completing the lost one.
      const next = double.enqueue('next', { heartbeatIntervalMs: 30 });
      await eventually(() => double.callsOf('heartbeat', next.taskId).length >= 1, 'the next task to run');
      expect(double.callsOf('complete', task.taskId)).toEqual([]);
      const beats = double.callsOf('heartbeat', task.taskId).length;
      double.loseLease(next.taskId);
      await eventually(() => double.callsOf('heartbeat', next.taskId).some((c) => c.status === 409), 'the next task to lose its lease too');
      expect(double.callsOf('heartbeat', task.taskId)).toHaveLength(beats);
    },
  );

  it('backs off and tries again on 503 and lost connections, polls, heartbeats and completions alike, and never stops', async () => {
    const g = gate();
    double.failNext('poll', 3, 503);
    double.failNext('poll', 2, 'drop');
    startWorker(g.handler);
    const task = double.enqueue('x', { heartbeatIntervalMs: 30 });
    await eventually(() => g.contexts.length === 1, 'the handler to run despite the failed polls');
    expect(double.callsOf('poll').map((c) => c.status)).toEqual([503, 503, 503, 0, 0, 200]);

    double.failNext('heartbeat', 2, 503);
    await eventually(() => double.callsOf('heartbeat', task.taskId).filter((c) => c.status === 200).length >= 2, 'heartbeats to recover');
    expect(g.contexts[0].signal.aborted).toBe(false);

    double.failNext('complete', 2, 503);
    double.failNext('complete', 1, 'drop');
    double.failNext('complete', 1, 500);
    g.release(0, 42);
    expect((await completionOf(task.taskId)).output).toBe(42);
    expect(double.callsOf('complete', task.taskId).map((c) => c.status)).toEqual([503, 503, 0, 500, 200]);
    expect(logs.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual(
      expect.arrayContaining(['poll failed; trying again', 'heartbeat failed; trying again', 'completion failed; trying again']),
    );
  });

  it('moves on when a completion is refused with 409: someone else owns the task now', async () => {
    startWorker((input) => input);
    const task = double.enqueue('first');
    // The lease lapses between the handler's end and the completion.
    double.failNext('complete', 1, 409);
    await eventually(() => double.callsOf('complete', task.taskId).length === 1, 'the refused completion');
    expect(double.task(task.taskId).completion).toBeNull();
    const next = double.enqueue('second');
    expect((await completionOf(next.taskId)).output).toBe('second');
    expect(logs.some((l) => l.level === 'warn' && l.message.startsWith('completion refused'))).toBe(true);
  });

  it('reports a task failed, not retryable, when its output is refused as too large', async () => {
    startWorker(() => ({ huge: true }));
    double.failNext('complete', 1, 413);
    const task = double.enqueue('x');
    expect((await completionOf(task.taskId)).error).toEqual({ code: 'output_too_large', message: expect.any(String), retryable: false });
    expect(double.callsOf('complete', task.taskId).map((c) => [c.status, c.body.outcome])).toEqual([
      [413, 'succeeded'],
      [200, 'failed'],
    ]);
  });

  it('runs at most `concurrency` tasks at once and polls only with a free slot', async () => {
    const g = gate();
    startWorker(g.handler, { concurrency: 3 });
    const tasks = Array.from({ length: 5 }, (_, i) => double.enqueue(i));
    await eventually(() => g.contexts.length === 3, 'three handlers to run');
    expect(worker!.activeTasks).toBe(3);
    expect(double.pollsWaiting).toBe(0);
    const pollsWhileBusy = double.callsOf('poll').length;
    expect(pollsWhileBusy).toBe(3);

    g.release(0, 'done');
    await eventually(() => g.contexts.length === 4, 'a fourth handler once a slot is free');
    expect(g.contexts.length).toBe(4);
    for (let i = 1; i < 4; i++) g.release(i, 'done');
    await eventually(() => g.contexts.length === 5, 'the fifth');
    g.release(4, 'done');
    for (const t of tasks) expect((await completionOf(t.taskId)).outcome).toBe('succeeded');
  });

  describe('stop', () => {
    it('stops polling and lets a running handler finish within the bound', async () => {
      const g = gate();
      startWorker(g.handler);
      const task = double.enqueue('x');
      await eventually(() => g.contexts.length === 1, 'the handler to run');
      let stopped = false;
      const stopping = worker!.stop({ timeoutMs: 30_000 }).then(() => (stopped = true));
      await eventually(() => double.pollsWaiting === 0, 'no poll held open');
      expect(stopped).toBe(false);
      g.release(0, 'finished');
      await stopping;
      expect(double.task(task.taskId).completion).toMatchObject({ outcome: 'succeeded', output: 'finished' });
      // Nothing more is taken from the queue.
      const later = double.enqueue('later');
      await worker!.done;
      expect(double.task(later.taskId).workerId).toBeNull();
    });

    it('gives back a task whose handler outlives the bound: failed, retryable, worker_shutdown', async () => {
      let reason: unknown = null;
      startWorker((_input, ctx) => {
        ctx.signal.addEventListener('abort', () => (reason = ctx.signal.reason));
        return new Promise(() => undefined); // ignores its signal, never ends
      });
      const task = double.enqueue('stubborn');
      await eventually(() => worker!.activeTasks === 1, 'the handler to run');
      await worker!.stop({ timeoutMs: 50 });
      expect(reason).toBeInstanceOf(WorkerShutdownError);
      expect(double.task(task.taskId).completion).toEqual({
        workerId: 'sdk-test',
        fencingToken: 1,
        outcome: 'failed',
        error: { code: 'worker_shutdown', message: expect.any(String), retryable: true },
      });
      expect(worker!.activeTasks).toBe(0);
    });

    it('stops when its signal is aborted', async () => {
      const controller = new AbortController();
      startWorker(() => 'ok', { signal: controller.signal, shutdownTimeoutMs: 1_000 });
      await eventually(() => double.pollsWaiting === 1, 'a poll held open');
      controller.abort();
      await worker!.done;
      expect(logs.map((l) => l.message)).toContain('task worker stopped');
    });
  });

  it('refuses invalid options at once', () => {
    const base = { url: double.url, token: 't', workspace: 'w', queue: 'q', handler: () => null };
    expect(() => createTaskWorker({ ...base, concurrency: 0 })).toThrow(/concurrency/);
    expect(() => createTaskWorker({ ...base, pollWaitMs: 30_001 })).toThrow(/pollWaitMs/);
    expect(() => createTaskWorker({ ...base, queue: '' })).toThrow(/queue/);
  });
});
