import { describe, it } from '@jest/globals';
import { InvalidStateError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  ATTEMPT_3,
  THREE_ATTEMPTS,
  aFailedExecution,
  aQueuedExecution,
  aRetryScheduled,
  aRunningExecution,
  aWorkflow,
  attemptScheduled,
  attemptTimedOut,
  cancelRequested,
  executionCancelled,
  executionTimedOut,
  given,
  iso,
  leaseExtended,
  timeOutAttempt,
} from '../../../test/support/executions/execution-fixtures.js';

const withRetries = aWorkflow({ retry: THREE_ATTEMPTS });

describe('TimeOutAttempt', () => {
  describe('when the lease of a running attempt has expired', () => {
    it('times the attempt out at its lease deadline and, with no retry left, the execution too', () => {
      given(aRunningExecution())
        .when(timeOutAttempt({ attemptId: ATTEMPT_1, at: 31_500 }))
        .then([
          { type: 'AttemptTimedOut', data: { attemptId: ATTEMPT_1, reason: 'lease_expired', deadline: iso(31_000), at: iso(31_500) } },
          { type: 'ExecutionTimedOut', data: { reason: 'attempt timed out and no retry is left', at: iso(31_500) } },
        ]);
    });

    it('times the attempt out exactly at leaseExpiresAt', () => {
      given(aRunningExecution())
        .when(timeOutAttempt({ at: 31_000 }))
        .then([attemptTimedOut({ at: 31_000, reason: 'lease_expired', deadline: 31_000 }), executionTimedOut({ at: 31_000 })]);
    });

    it('schedules a retry when the policy allows another attempt', () => {
      given(aRunningExecution({ workflow: withRetries }))
        .when(timeOutAttempt({ nextAttemptId: ATTEMPT_2, jitter: 0, at: 32_000 }))
        .then([
          attemptTimedOut({ at: 32_000, reason: 'lease_expired', deadline: 31_000 }),
          attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 32_000, notBefore: 33_000 }),
        ]);
    });

    it('ends in cancellation, not in a retry, when a cancel was requested', () => {
      given([...aRunningExecution({ workflow: withRetries }), cancelRequested({ at: 3_000 })])
        .when(timeOutAttempt({ at: 32_000 }))
        .then([attemptTimedOut({ at: 32_000, reason: 'lease_expired', deadline: 31_000 }), executionCancelled({ at: 32_000 })]);
    });
  });

  describe('when a heartbeat extended the lease first', () => {
    const extended = [...aRunningExecution(), leaseExtended({ at: 20_000 })];

    it('keeps the attempt alive: the watchdog is refused and nothing is recorded', () => {
      given(extended)
        .when(timeOutAttempt({ at: 31_000 }))
        .thenThrows(InvalidStateError);
    });

    it('times the attempt out at the extended deadline', () => {
      given(extended)
        .when(timeOutAttempt({ at: 50_000 }))
        .then([attemptTimedOut({ at: 50_000, reason: 'lease_expired', deadline: 50_000 }), executionTimedOut({ at: 50_000 })]);
    });
  });

  describe('when the attempt is still queued', () => {
    it('times it out at its queue deadline when nobody claimed it', () => {
      given(aQueuedExecution())
        .when(timeOutAttempt({ at: 60_000 }))
        .then([
          { type: 'AttemptTimedOut', data: { attemptId: ATTEMPT_1, reason: 'queue_deadline', deadline: iso(60_000), at: iso(60_000) } },
          executionTimedOut({ at: 60_000 }),
        ]);
    });

    it('refuses to time it out before the queue deadline', () => {
      given(aQueuedExecution())
        .when(timeOutAttempt({ at: 59_999 }))
        .thenThrows(InvalidStateError);
    });

    it('counts the queue deadline of a retry from its notBefore', () => {
      given(aRetryScheduled())
        .when(timeOutAttempt({ attemptId: ATTEMPT_2, at: 65_999 }))
        .thenThrows(InvalidStateError);
    });

    it('retries a queued retry that timed out while attempts are left', () => {
      given(aRetryScheduled())
        .when(timeOutAttempt({ attemptId: ATTEMPT_2, nextAttemptId: ATTEMPT_3, at: 66_000 }))
        .then([
          attemptTimedOut({ attemptId: ATTEMPT_2, at: 66_000, reason: 'queue_deadline', deadline: 66_000 }),
          attemptScheduled({ attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'retry', at: 66_000, notBefore: 68_000 }),
        ]);
    });
  });

  describe('when the attempt is not the one to time out', () => {
    it('rejects an attempt a retry superseded', () => {
      given(aRetryScheduled())
        .when(timeOutAttempt({ attemptId: ATTEMPT_1, at: 90_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects an attempt that already ended', () => {
      given(aFailedExecution())
        .when(timeOutAttempt({ at: 90_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a second time-out of the same attempt', () => {
      given([
        ...aRunningExecution(),
        attemptTimedOut({ at: 31_000, reason: 'lease_expired', deadline: 31_000 }),
        executionTimedOut({ at: 31_000 }),
      ])
        .when(timeOutAttempt({ at: 32_000 }))
        .thenThrows(StaleAttemptError);
    });
  });

  describe('when the execution does not exist', () => {
    it('rejects the time-out as not found', () => {
      given([])
        .when(timeOutAttempt({ at: 90_000 }))
        .thenThrows(NotFoundError);
    });
  });
});
