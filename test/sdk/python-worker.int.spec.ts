import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/eventually.js';
import { TaskQueueDouble } from '../support/task-queue-double.js';

/** examples/python-worker/worker.py (python3, standard library only) against the loopback double of the task protocol. */
const SCRIPT = fileURLToPath(new URL('../../examples/python-worker/worker.py', import.meta.url));

describe('the Python example worker', () => {
  let double: TaskQueueDouble;
  let child: ChildProcess | null = null;
  let output = '';

  beforeEach(async () => {
    double = new TaskQueueDouble('dev', 'python');
    await double.start();
    output = '';
  });
  afterEach(async () => {
    child?.kill('SIGKILL');
    child = null;
    await double.stop();
  });

  function spawnWorker(): ChildProcess {
    const env = {
      PATH: process.env.PATH,
      FLOSTRA_API_URL: double.url,
      FLOSTRA_TOKEN: double.token,
      FLOSTRA_WORKSPACE: 'dev',
      FLOSTRA_QUEUE: 'python',
      FLOSTRA_CONCURRENCY: '2',
      FLOSTRA_WORKER_ID: 'py-1',
    };
    child = spawn('python3', [SCRIPT], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    return child;
  }

  const completionOf = (taskId: string) =>
    eventually(() => double.task(taskId).completion ?? false, { what: () => `task ${taskId} to be completed; worker said:\n${output}` });

  it('runs tasks, heartbeats with progress, reports failures, and survives 503s and a refused completion', async () => {
    double.failNext('poll', 2, 503);
    spawnWorker();
    const task = double.enqueue({ text: 'the quick brown fox' }, { heartbeatIntervalMs: 50 });
    expect(await completionOf(task.taskId)).toEqual({
      workerId: 'py-1',
      fencingToken: 1,
      outcome: 'succeeded',
      output: { words: 4, longest: 'quick', by: 'python' },
      // The slot is free again: the completion asks for the next task.
      next: true,
    });
    expect(double.callsOf('heartbeat', task.taskId)[0].body).toEqual({
      workerId: 'py-1',
      fencingToken: 1,
      progress: { stage: 'counting' },
    });
    expect(
      double
        .callsOf('poll')
        .slice(0, 2)
        .map((c) => c.status),
    ).toEqual([503, 503]);

    const bad = double.enqueue({ text: 7 });
    expect((await completionOf(bad.taskId)).error).toEqual({ code: 'bad_input', message: 'input.text must be a string', retryable: false });

    double.failNext('complete', 1, 409);
    const refused = double.enqueue({ text: 'a' });
    await eventually(() => double.callsOf('complete', refused.taskId).length === 1, 'the refused completion');
    double.failNext('complete', 1, 503);
    const after = double.enqueue({ text: 'still here' });
    expect((await completionOf(after.taskId)).output).toEqual({ words: 2, longest: 'still', by: 'python' });
    expect(double.callsOf('complete', after.taskId).map((c) => c.status)).toEqual([503, 200]);
  });

  it('stops on SIGTERM and exits', async () => {
    const worker = spawnWorker();
    await eventually(() => double.pollsWaiting >= 1, { what: () => `a poll held open; worker said:\n${output}` });
    const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
    worker.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('python task worker stopped');
  });
});
