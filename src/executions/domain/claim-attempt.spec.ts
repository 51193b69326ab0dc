import { describe, it } from '@jest/globals';
import { LeaseExpiredError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  ATTEMPT_3,
  FAILURE,
  THREE_ATTEMPTS,
  WORKER_A,
  WORKER_B,
  aFailedExecution,
  aQueuedExecution,
  aRetryScheduled,
  aRunningExecution,
  aWorkflow,
  attemptCancelled,
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  attemptTimedOut,
  cancelRequested,
  claimAttempt,
  executionCancelled,
  executionFailed,
  executionTimedOut,
  given,
  iso,
  redriveRequested,
} from '../../../test/support/executions/execution-fixtures.js';

describe('ClaimAttempt', () => {
  describe('when the attempt is queued', () => {
    it('grants the claim with the next fencing token and a lease of leaseMs from now', () => {
      given(aQueuedExecution())
        .when(claimAttempt({ attemptId: ATTEMPT_1, workerId: WORKER_A, at: 2_000 }))
        .then([
          {
            type: 'AttemptClaimed',
            data: { attemptId: ATTEMPT_1, workerId: WORKER_A, fencingToken: 1, leaseExpiresAt: iso(32_000), claimedAt: iso(2_000) },
          },
        ]);
    });

    it('grants a claim one millisecond before the queue deadline', () => {
      given(aQueuedExecution())
        .when(claimAttempt({ at: 59_999 }))
        .then([attemptClaimed({ at: 59_999 })]);
    });

    it('rejects a claim at the queue deadline even though no time-out was recorded (promise 4)', () => {
      given(aQueuedExecution())
        .when(claimAttempt({ at: 60_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a claim after the queue deadline', () => {
      given(aQueuedExecution())
        .when(claimAttempt({ at: 90_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a claim of an attempt that is not the current one', () => {
      given(aQueuedExecution())
        .when(claimAttempt({ attemptId: ATTEMPT_2, at: 2_000 }))
        .thenThrows(StaleAttemptError);
    });
  });

  describe('when the attempt is claimed (promise 3)', () => {
    it('answers the same worker asking again while its lease is valid without a new fact (a lost reply retried)', () => {
      given(aRunningExecution())
        .when(claimAttempt({ workerId: WORKER_A, at: 30_999 }))
        .thenNothingHappens();
    });

    it('rejects a second claim by another worker', () => {
      given(aRunningExecution())
        .when(claimAttempt({ workerId: WORKER_B, at: 2_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects another worker even after the lease expired: only the watchdog ends a claim', () => {
      given(aRunningExecution())
        .when(claimAttempt({ workerId: WORKER_B, at: 45_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects the same worker asking again once its lease expired', () => {
      given(aRunningExecution())
        .when(claimAttempt({ workerId: WORKER_A, at: 31_000 }))
        .thenThrows(LeaseExpiredError);
    });
  });

  describe('when the attempt is a retry waiting for its backoff', () => {
    it('rejects a claim before notBefore', () => {
      given(aRetryScheduled())
        .when(claimAttempt({ attemptId: ATTEMPT_2, at: 5_999 }))
        .thenThrows(StaleAttemptError);
    });

    it('grants a claim from notBefore on, with a fencing token above the last one', () => {
      given(aRetryScheduled())
        .when(claimAttempt({ attemptId: ATTEMPT_2, workerId: WORKER_B, at: 6_000 }))
        .then([attemptClaimed({ attemptId: ATTEMPT_2, workerId: WORKER_B, fencingToken: 2, at: 6_000 })]);
    });

    it('grants a claim until queueMs after notBefore, not after scheduling', () => {
      given(aRetryScheduled())
        .when(claimAttempt({ attemptId: ATTEMPT_2, at: 65_999 }))
        .then([attemptClaimed({ attemptId: ATTEMPT_2, fencingToken: 2, at: 65_999 })]);
    });

    it('rejects a claim at the queue deadline queueMs after notBefore', () => {
      given(aRetryScheduled())
        .when(claimAttempt({ attemptId: ATTEMPT_2, at: 66_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a claim of the attempt the retry superseded', () => {
      given(aRetryScheduled())
        .when(claimAttempt({ attemptId: ATTEMPT_1, at: 7_000 }))
        .thenThrows(StaleAttemptError);
    });
  });

  describe('when the attempt was superseded by a redrive', () => {
    const redriven = [
      ...aFailedExecution(),
      redriveRequested({ at: 10_000, attemptNumber: 2 }),
      attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 10_000 }),
    ];

    it('rejects a claim of the old attempt', () => {
      given(redriven)
        .when(claimAttempt({ attemptId: ATTEMPT_1, at: 11_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('grants a claim of the redriven attempt', () => {
      given(redriven)
        .when(claimAttempt({ attemptId: ATTEMPT_2, at: 11_000 }))
        .then([attemptClaimed({ attemptId: ATTEMPT_2, fencingToken: 2, at: 11_000 })]);
    });
  });

  describe('when the attempt has ended', () => {
    it('rejects a claim of an attempt that timed out in the queue', () => {
      given([
        ...aQueuedExecution(),
        attemptTimedOut({ at: 60_000, reason: 'queue_deadline', deadline: 60_000 }),
        executionTimedOut({ at: 60_000 }),
      ])
        .when(claimAttempt({ at: 61_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a claim of an attempt cancelled in the queue', () => {
      given([...aQueuedExecution(), cancelRequested({ at: 500 }), attemptCancelled({ at: 500 }), executionCancelled({ at: 500 })])
        .when(claimAttempt({ at: 1_000 }))
        .thenThrows(StaleAttemptError);
    });
  });

  describe('when the execution does not exist', () => {
    it('rejects the claim as not found', () => {
      given([])
        .when(claimAttempt({ at: 1_000 }))
        .thenThrows(NotFoundError);
    });
  });

  describe('across attempts', () => {
    it('hands out strictly increasing fencing tokens, also after a redrive', () => {
      const workflow = aWorkflow({ retry: { ...THREE_ATTEMPTS, maxAttempts: 2 } });
      given([
        ...aRunningExecution({ workflow }),
        attemptFailed({ at: 5_000, error: FAILURE }),
        attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 5_000, notBefore: 6_000 }),
        attemptClaimed({ attemptId: ATTEMPT_2, workerId: WORKER_B, fencingToken: 2, at: 7_000 }),
        attemptFailed({ attemptId: ATTEMPT_2, at: 8_000, error: FAILURE }),
        executionFailed({ at: 8_000, error: FAILURE }),
        redriveRequested({ at: 9_000, attemptNumber: 3, attemptId: ATTEMPT_3 }),
        attemptScheduled({ attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'redrive', at: 9_000 }),
      ])
        .when(claimAttempt({ attemptId: ATTEMPT_3, workerId: WORKER_A, at: 10_000 }))
        .then([attemptClaimed({ attemptId: ATTEMPT_3, workerId: WORKER_A, fencingToken: 3, at: 10_000 })]);
    });
  });
});
