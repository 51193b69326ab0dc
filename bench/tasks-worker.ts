import { createTaskWorker } from '../src/sdk/worker.js';

/**
 * bench:tasks's task worker, a process of its own: the SDK serving one queue with a handler that
 * does nothing (the task counterpart of a `noop` node). Configured by the environment; prints
 * `task worker polling` once started, stops on SIGTERM.
 */
const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
};

const worker = createTaskWorker({
  url: env('FLOSTRA_API_URL'),
  token: env('FLOSTRA_TOKEN'),
  workspace: env('FLOSTRA_WORKSPACE'),
  queue: env('FLOSTRA_QUEUE'),
  concurrency: Number(env('FLOSTRA_CONCURRENCY')),
  workerId: 'bench-task-worker',
  shutdownTimeoutMs: 5_000,
  handler: () => null,
});
worker.start();
process.stdout.write('task worker polling\n');
await worker.done;
