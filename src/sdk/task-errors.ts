/**
 * The errors of the task worker SDK. A handler throws `RetryableError` or `NonRetryableError` to
 * say how its failure is reported; the others are the reasons a task's `ctx.signal` fires, and the
 * error of a call to the API that did not succeed.
 */

/** Failure codes are 1–128 characters on the wire; messages at most 4,096. */
const MAX_CODE = 128;
const MAX_MESSAGE = 4096;

function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text;
}

/** A failure of a task that its node's retry policy may retry (the default for any thrown error). */
export class RetryableError extends Error {
  override readonly name: string = 'RetryableError';
  readonly retryable: boolean = true;
  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A failure of a task that is never retried, whatever the node's retry policy says. */
export class NonRetryableError extends Error {
  override readonly name: string = 'NonRetryableError';
  readonly retryable: boolean = false;
  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `ctx.signal`'s reason when the task's execution was cancelled (a heartbeat answered `cancelRequested`). */
export class TaskCancelledError extends Error {
  override readonly name = 'TaskCancelledError';
  readonly code = 'task_cancelled';
  constructor(readonly taskId: string) {
    super(`task ${taskId} was cancelled`);
  }
}

/**
 * `ctx.signal`'s reason when this worker no longer holds the task: a heartbeat answered
 * `409 stale_attempt` or `409 lease_expired`. Nothing the worker reports for it is recorded any more.
 */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  constructor(
    readonly taskId: string,
    readonly code: string,
  ) {
    super(`task ${taskId}: this worker no longer holds it (${code})`);
  }
}

/** `ctx.signal`'s reason when the worker stops and the handler did not finish within the stop's bound. */
export class WorkerShutdownError extends Error {
  override readonly name = 'WorkerShutdownError';
  readonly code = 'worker_shutdown';
  constructor(readonly taskId: string) {
    super(`task ${taskId} was given back: the worker is shutting down`);
  }
}

/** A call to the API that did not succeed: a problem answer (`status` and its `code`), or no answer at all (`status` 0). */
export class TaskApiError extends Error {
  override readonly name = 'TaskApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** From a `Retry-After` header, when the server sent one. */
    readonly retryAfterMs: number | null = null,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /** Worth trying again later: no answer, a timeout, too many requests, or a server error (503 `unavailable` above all). */
  get transient(): boolean {
    return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500;
  }

  /** The task is no longer this worker's: `409 stale_attempt` or `409 lease_expired`. */
  get leaseLost(): boolean {
    return this.status === 409;
  }
}

/** The `error` of a failed completion. */
export interface TaskFailure {
  code: string;
  message: string;
  retryable: boolean;
}

/**
 * How a handler's thrown value is reported: `RetryableError` and `NonRetryableError` as they say;
 * anything else is retryable with code `task_error` and the error's message.
 */
export function toTaskFailure(thrown: unknown): TaskFailure {
  if (thrown instanceof RetryableError || thrown instanceof NonRetryableError) {
    return { code: clip(thrown.code || 'task_error', MAX_CODE), message: clip(thrown.message, MAX_MESSAGE), retryable: thrown.retryable };
  }
  if (thrown instanceof TaskCancelledError) return { code: thrown.code, message: thrown.message, retryable: false };
  if (thrown instanceof WorkerShutdownError) return { code: thrown.code, message: thrown.message, retryable: true };
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  return { code: 'task_error', message: clip(message, MAX_MESSAGE), retryable: true };
}
