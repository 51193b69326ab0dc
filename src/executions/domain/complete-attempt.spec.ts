import { describe, it } from '@jest/globals';
import { InvalidStateError, LeaseExpiredError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import type { ExecutionEvent } from './execution.events.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  ATTEMPT_3,
  FAILURE,
  THREE_ATTEMPTS,
  WORKER_A,
  WORKER_B,
  aRetryScheduled,
  aRunningExecution,
  aWorkflow,
  attemptCancelled,
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  attemptSucceeded,
  attemptTimedOut,
  cancelRequested,
  completeAttempt,
  executionCancelled,
  executionFailed,
  executionSucceeded,
  executionTimedOut,
  given,
  iso,
  leaseExtended,
} from '../../../test/support/executions/execution-fixtures.js';

const OUTPUT = { rows: 42 };
const withRetries = aWorkflow({ retry: THREE_ATTEMPTS });

/** Attempt 2 of THREE_ATTEMPTS claimed by worker B with fencing token 2 at 7 000. */
const secondAttemptRunning = (): ExecutionEvent[] => [
  ...aRetryScheduled(),
  attemptClaimed({ attemptId: ATTEMPT_2, workerId: WORKER_B, fencingToken: 2, at: 7_000 }),
];

/** Attempt 3 of THREE_ATTEMPTS claimed by worker A with fencing token 3 at 11 000: the last one. */
const lastAttemptRunning = (): ExecutionEvent[] => [
  ...secondAttemptRunning(),
  attemptFailed({ attemptId: ATTEMPT_2, at: 8_000, error: FAILURE }),
  attemptScheduled({ attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'retry', at: 8_000, notBefore: 10_000 }),
  attemptClaimed({ attemptId: ATTEMPT_3, workerId: WORKER_A, fencingToken: 3, at: 11_000 }),
];

describe('CompleteAttempt', () => {
  describe('when the attempt succeeded', () => {
    it('ends the attempt and the execution with the output', () => {
      given(aRunningExecution())
        .when(completeAttempt({ outcome: 'succeeded', output: OUTPUT, at: 5_000 }))
        .then([
          { type: 'AttemptSucceeded', data: { attemptId: ATTEMPT_1, output: OUTPUT, at: iso(5_000) } },
          { type: 'ExecutionSucceeded', data: { output: OUTPUT, at: iso(5_000) } },
        ]);
    });

    it('records a null output when the worker sent none', () => {
      given(aRunningExecution())
        .when(completeAttempt({ outcome: 'succeeded', at: 5_000 }))
        .then([attemptSucceeded({ at: 5_000, output: null }), executionSucceeded({ at: 5_000, output: null })]);
    });

    it('accepts the completion within a lease a heartbeat extended', () => {
      given([...aRunningExecution(), leaseExtended({ at: 20_000 })])
        .when(completeAttempt({ outcome: 'succeeded', output: OUTPUT, at: 45_000 }))
        .then([attemptSucceeded({ at: 45_000, output: OUTPUT }), executionSucceeded({ at: 45_000, output: OUTPUT })]);
    });
  });

  describe('when the same completion arrives twice', () => {
    const succeeded = [
      ...aRunningExecution(),
      attemptSucceeded({ at: 5_000, output: OUTPUT }),
      executionSucceeded({ at: 5_000, output: OUTPUT }),
    ];

    it('records nothing the second time', () => {
      given(succeeded)
        .when(completeAttempt({ outcome: 'succeeded', output: OUTPUT, at: 6_000 }))
        .thenNothingHappens();
    });

    it('records nothing even when the duplicate arrives after the lease', () => {
      given(succeeded)
        .when(completeAttempt({ outcome: 'succeeded', output: OUTPUT, at: 90_000 }))
        .thenNothingHappens();
    });

    it('records nothing for a failure that was already turned into a retry', () => {
      given(aRetryScheduled())
        .when(completeAttempt({ outcome: 'failed', error: FAILURE, at: 5_500 }))
        .thenNothingHappens();
    });

    it('rejects a different outcome after the attempt ended', () => {
      given(succeeded)
        .when(completeAttempt({ outcome: 'failed', error: FAILURE, at: 6_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects the same outcome from another worker', () => {
      given(succeeded)
        .when(completeAttempt({ outcome: 'succeeded', workerId: WORKER_B, at: 6_000 }))
        .thenThrows(StaleAttemptError);
    });
  });

  describe('when the completion does not carry the current claim (promise 3)', () => {
    it('rejects another worker', () => {
      given(aRunningExecution())
        .when(completeAttempt({ outcome: 'succeeded', workerId: WORKER_B, at: 5_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a wrong fencing token', () => {
      given(aRunningExecution())
        .when(completeAttempt({ outcome: 'succeeded', fencingToken: 7, at: 5_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects the claim of an attempt a retry superseded', () => {
      given(secondAttemptRunning())
        .when(completeAttempt({ attemptId: ATTEMPT_1, outcome: 'succeeded', at: 7_500 }))
        .thenThrows(StaleAttemptError);
    });
  });

  describe('when the lease has expired (promise 4)', () => {
    it('rejects a late completion although no time-out was recorded', () => {
      given(aRunningExecution())
        .when(completeAttempt({ outcome: 'succeeded', output: OUTPUT, at: 31_000 }))
        .thenThrows(LeaseExpiredError);
    });

    it('rejects a late completion after the attempt timed out: it never comes back to life', () => {
      given([
        ...aRunningExecution(),
        attemptTimedOut({ at: 31_000, reason: 'lease_expired', deadline: 31_000 }),
        executionTimedOut({ at: 31_000 }),
      ])
        .when(completeAttempt({ outcome: 'succeeded', output: OUTPUT, at: 32_000 }))
        .thenThrows(LeaseExpiredError);
    });
  });

  describe('when the attempt failed and the workflow allows no retry', () => {
    it('fails the execution with the error', () => {
      given(aRunningExecution())
        .when(completeAttempt({ outcome: 'failed', error: FAILURE, at: 5_000 }))
        .then([
          { type: 'AttemptFailed', data: { attemptId: ATTEMPT_1, error: FAILURE, at: iso(5_000) } },
          { type: 'ExecutionFailed', data: { error: FAILURE, at: iso(5_000) } },
        ]);
    });

    it('records a generic error when the worker sent none', () => {
      const generic = { code: 'attempt_failed', message: 'attempt failed' };
      given(aRunningExecution())
        .when(completeAttempt({ outcome: 'failed', at: 5_000 }))
        .then([attemptFailed({ at: 5_000, error: generic }), executionFailed({ at: 5_000, error: generic })]);
    });
  });

  describe('when the attempt failed and the retry policy allows another attempt', () => {
    it('schedules attempt n+1 after the backoff, its queue deadline counted from notBefore', () => {
      given(aRunningExecution({ workflow: withRetries }))
        .when(completeAttempt({ outcome: 'failed', error: FAILURE, nextAttemptId: ATTEMPT_2, jitter: 0, at: 5_000 }))
        .then([
          attemptFailed({ at: 5_000, error: FAILURE }),
          {
            type: 'AttemptScheduled',
            data: {
              attemptId: ATTEMPT_2,
              attemptNumber: 2,
              reason: 'retry',
              notBefore: iso(6_000),
              queueDeadline: iso(66_000),
              scheduledAt: iso(5_000),
            },
          },
        ]);
    });

    it('spreads the backoff with the jitter of the command', () => {
      given(aRunningExecution({ workflow: withRetries }))
        .when(completeAttempt({ outcome: 'failed', error: FAILURE, jitter: 0.5, at: 5_000 }))
        .then([
          attemptFailed({ at: 5_000, error: FAILURE }),
          attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 5_000, notBefore: 6_500 }),
        ]);
    });

    it('waits exponentially longer before the next retry', () => {
      given(secondAttemptRunning())
        .when(
          completeAttempt({
            attemptId: ATTEMPT_2,
            workerId: WORKER_B,
            fencingToken: 2,
            outcome: 'failed',
            error: FAILURE,
            nextAttemptId: ATTEMPT_3,
            at: 8_000,
          }),
        )
        .then([
          attemptFailed({ attemptId: ATTEMPT_2, at: 8_000, error: FAILURE }),
          attemptScheduled({ attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'retry', at: 8_000, notBefore: 10_000 }),
        ]);
    });

    it('fails the execution once the attempts are exhausted', () => {
      given(lastAttemptRunning())
        .when(completeAttempt({ attemptId: ATTEMPT_3, workerId: WORKER_A, fencingToken: 3, outcome: 'failed', error: FAILURE, at: 12_000 }))
        .then([attemptFailed({ attemptId: ATTEMPT_3, at: 12_000, error: FAILURE }), executionFailed({ at: 12_000, error: FAILURE })]);
    });

    it('fails the execution at once for an error code the policy lists as non-retryable', () => {
      const badRequest = { code: 'bad_request', message: 'the upstream rejected the payload' };
      given(aRunningExecution({ workflow: withRetries }))
        .when(completeAttempt({ outcome: 'failed', error: badRequest, at: 5_000 }))
        .then([attemptFailed({ at: 5_000, error: badRequest }), executionFailed({ at: 5_000, error: badRequest })]);
    });

    it('fails the execution at once for an error marked retryable: false', () => {
      const permanent = { ...FAILURE, retryable: false };
      given(aRunningExecution({ workflow: withRetries }))
        .when(completeAttempt({ outcome: 'failed', error: permanent, at: 5_000 }))
        .then([attemptFailed({ at: 5_000, error: permanent }), executionFailed({ at: 5_000, error: permanent })]);
    });
  });

  describe('when the outcome is cancelled (promise 7)', () => {
    it('rejects it when nobody asked for a cancel', () => {
      given(aRunningExecution())
        .when(completeAttempt({ outcome: 'cancelled', at: 5_000 }))
        .thenThrows(InvalidStateError);
    });

    it('cancels the attempt and the execution with the reason of the request', () => {
      given([...aRunningExecution(), cancelRequested({ at: 3_000, reason: 'wrong input' })])
        .when(completeAttempt({ outcome: 'cancelled', at: 5_000 }))
        .then([attemptCancelled({ at: 5_000 }), executionCancelled({ at: 5_000, reason: 'wrong input' })]);
    });

    it('records nothing for the same cancellation twice', () => {
      given([...aRunningExecution(), cancelRequested({ at: 3_000 }), attemptCancelled({ at: 5_000 }), executionCancelled({ at: 5_000 })])
        .when(completeAttempt({ outcome: 'cancelled', at: 6_000 }))
        .thenNothingHappens();
    });
  });

  describe('when a cancel was requested while the attempt ran', () => {
    const cancelling = [...aRunningExecution({ workflow: withRetries }), cancelRequested({ at: 3_000 })];

    it('ends a failure in cancellation, never in a retry', () => {
      given(cancelling)
        .when(completeAttempt({ outcome: 'failed', error: FAILURE, at: 5_000 }))
        .then([attemptFailed({ at: 5_000, error: FAILURE }), executionCancelled({ at: 5_000 })]);
    });

    it('still records a success the worker finished before it noticed', () => {
      given(cancelling)
        .when(completeAttempt({ outcome: 'succeeded', output: OUTPUT, at: 5_000 }))
        .then([attemptSucceeded({ at: 5_000, output: OUTPUT }), executionSucceeded({ at: 5_000, output: OUTPUT })]);
    });
  });

  describe('when the execution does not exist', () => {
    it('rejects the completion as not found', () => {
      given([])
        .when(completeAttempt({ outcome: 'succeeded', at: 5_000 }))
        .thenThrows(NotFoundError);
    });
  });
});
