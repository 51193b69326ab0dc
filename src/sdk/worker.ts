/**
 * `flostra/worker`: the SDK for task workers, programs of your own that run the `task` nodes of
 * Flostra workflows. It depends on nothing but Node.js (20.19 or later) and speaks the task-queue
 * calls of the HTTP API: poll, heartbeat, complete. See docs/worker-sdk.md.
 */
export { createTaskWorker } from './task-worker.js';
export type { TaskContext, TaskHandler, TaskWorker, TaskWorkerLogger, TaskWorkerOptions } from './task-worker.js';
export type { HeartbeatAnswer, PolledTask } from './task-api.js';
export type { BackoffPolicy } from './backoff.js';
export {
  LeaseLostError,
  NonRetryableError,
  RetryableError,
  TaskApiError,
  TaskCancelledError,
  WorkerShutdownError,
  toTaskFailure,
  type TaskFailure,
} from './task-errors.js';
