import { describe, it } from '@jest/globals';
import { InvalidStateError, NotFoundError } from '../../core/errors.js';
import type { ExecutionEvent } from './execution.events.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  FAILURE,
  THREE_ATTEMPTS,
  aFailedExecution,
  aQueuedExecution,
  aRunningExecution,
  aWorkflow,
  attemptFailed,
  attemptScheduled,
  attemptTimedOut,
  given,
  iso,
  redriveRequested,
  timeOutExecution,
} from '../../../test/support/executions/execution-fixtures.js';

const EXECUTION_MS = 100_000;
const bounded = aWorkflow({ timeouts: { executionMs: EXECUTION_MS } });
const boundedWithRetries = aWorkflow({ retry: THREE_ATTEMPTS, timeouts: { executionMs: EXECUTION_MS } });

const executionTimedOut = (at: number): ExecutionEvent => ({
  type: 'ExecutionTimedOut',
  data: { reason: 'execution deadline passed', at: iso(at) },
});

describe('TimeOutExecution', () => {
  describe('when the execution ran past timeouts.executionMs', () => {
    it('times out the running attempt and the execution', () => {
      given(aRunningExecution({ workflow: bounded }))
        .when(timeOutExecution({ at: 100_500 }))
        .then([
          {
            type: 'AttemptTimedOut',
            data: { attemptId: ATTEMPT_1, reason: 'execution_deadline', deadline: iso(EXECUTION_MS), at: iso(100_500) },
          },
          executionTimedOut(100_500),
        ]);
    });

    it('times out a queued attempt exactly at the deadline', () => {
      given(aQueuedExecution({ workflow: bounded }))
        .when(timeOutExecution({ at: EXECUTION_MS }))
        .then([
          attemptTimedOut({ at: EXECUTION_MS, reason: 'execution_deadline', deadline: EXECUTION_MS }),
          executionTimedOut(EXECUTION_MS),
        ]);
    });

    it('schedules no retry, whatever the retry policy allows', () => {
      given([
        ...aRunningExecution({ workflow: boundedWithRetries }),
        attemptFailed({ at: 5_000, error: FAILURE }),
        attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 5_000, notBefore: 6_000 }),
      ])
        .when(timeOutExecution({ at: 120_000 }))
        .then([
          attemptTimedOut({ attemptId: ATTEMPT_2, at: 120_000, reason: 'execution_deadline', deadline: EXECUTION_MS }),
          executionTimedOut(120_000),
        ]);
    });
  });

  describe('when the deadline has not passed', () => {
    it('refuses: the execution keeps running and nothing is recorded', () => {
      given(aRunningExecution({ workflow: bounded }))
        .when(timeOutExecution({ at: EXECUTION_MS - 1 }))
        .thenThrows(InvalidStateError, (error) => {
          if (error.details?.['deadline'] !== iso(EXECUTION_MS))
            throw new Error(`expected the deadline in the details, got ${JSON.stringify(error.details)}`);
        });
    });
  });

  describe('when the execution was redriven', () => {
    const redriven = (): ExecutionEvent[] => [
      ...aFailedExecution({ workflow: bounded }),
      redriveRequested({ at: 500_000, attemptNumber: 2 }),
      attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 500_000 }),
    ];

    it('counts the deadline from the redrive, not from the first start', () => {
      given(redriven())
        .when(timeOutExecution({ at: 500_000 + EXECUTION_MS - 1 }))
        .thenThrows(InvalidStateError);
    });

    it('times the redriven run out once its own deadline passed', () => {
      given(redriven())
        .when(timeOutExecution({ at: 500_000 + EXECUTION_MS }))
        .then([
          attemptTimedOut({
            attemptId: ATTEMPT_2,
            at: 500_000 + EXECUTION_MS,
            reason: 'execution_deadline',
            deadline: 500_000 + EXECUTION_MS,
          }),
          executionTimedOut(500_000 + EXECUTION_MS),
        ]);
    });
  });

  describe('when the execution already ended', () => {
    it('does nothing', () => {
      given(aFailedExecution({ workflow: bounded }))
        .when(timeOutExecution({ at: 200_000 }))
        .thenNothingHappens();
    });

    it('does nothing after an earlier time-out', () => {
      given([
        ...aRunningExecution({ workflow: bounded }),
        attemptTimedOut({ at: EXECUTION_MS, reason: 'execution_deadline', deadline: EXECUTION_MS }),
        executionTimedOut(EXECUTION_MS),
      ])
        .when(timeOutExecution({ at: 200_000 }))
        .thenNothingHappens();
    });
  });

  describe('when the execution does not exist', () => {
    it('rejects the time-out as not found', () => {
      given([])
        .when(timeOutExecution({ at: 200_000 }))
        .thenThrows(NotFoundError);
    });
  });
});
