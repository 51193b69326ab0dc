import { describe, expect, it } from '@jest/globals';
import { NonRetryableError, RetryableError, TaskApiError, TaskCancelledError, WorkerShutdownError, toTaskFailure } from './task-errors.js';

describe('toTaskFailure', () => {
  it('reports the typed errors as they say, and anything else as a retryable task_error', () => {
    expect(toTaskFailure(new RetryableError('busy', 'later'))).toEqual({ code: 'busy', message: 'later', retryable: true });
    expect(toTaskFailure(new NonRetryableError('bad_input', 'no'))).toEqual({ code: 'bad_input', message: 'no', retryable: false });
    expect(toTaskFailure(new TypeError('x is undefined'))).toEqual({ code: 'task_error', message: 'x is undefined', retryable: true });
    expect(toTaskFailure(42)).toEqual({ code: 'task_error', message: '42', retryable: true });
    expect(toTaskFailure(new TaskCancelledError('t'))).toMatchObject({ code: 'task_cancelled', retryable: false });
    expect(toTaskFailure(new WorkerShutdownError('t'))).toMatchObject({ code: 'worker_shutdown', retryable: true });
  });

  it('clips codes and messages to what the API accepts', () => {
    const failure = toTaskFailure(new NonRetryableError('c'.repeat(200), 'm'.repeat(10_000)));
    expect([failure.code.length, failure.message.length]).toEqual([128, 4096]);
  });
});

describe('TaskApiError', () => {
  it('is transient without an answer and on 408, 429 and 5xx; a 409 means the lease is lost', () => {
    const statuses = [0, 400, 401, 403, 404, 408, 409, 429, 500, 503];
    expect(statuses.filter((status) => new TaskApiError(status, 'x', 'x').transient)).toEqual([0, 408, 429, 500, 503]);
    expect(statuses.filter((status) => new TaskApiError(status, 'x', 'x').leaseLost)).toEqual([409]);
  });
});
