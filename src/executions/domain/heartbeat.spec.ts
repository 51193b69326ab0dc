import { describe, expect, it } from '@jest/globals';
import { LeaseExpiredError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  THREE_ATTEMPTS,
  WORKER_A,
  WORKER_B,
  aQueuedExecution,
  aRetryScheduled,
  aRunningExecution,
  aWorkflow,
  attemptClaimed,
  attemptScheduled,
  attemptSucceeded,
  attemptTimedOut,
  executionSucceeded,
  executionTimedOut,
  given,
  heartbeat,
  iso,
  leaseExtended,
} from '../../../test/support/executions/execution-fixtures.js';

describe('Heartbeat', () => {
  describe('when the worker holds the live claim', () => {
    it('extends the lease to leaseMs from now', () => {
      given(aRunningExecution())
        .when(heartbeat({ attemptId: ATTEMPT_1, workerId: WORKER_A, fencingToken: 1, at: 11_000 }))
        .then([{ type: 'LeaseExtended', data: { attemptId: ATTEMPT_1, leaseExpiresAt: iso(41_000), extendedAt: iso(11_000) } }]);
    });

    it('extends the lease again from each heartbeat', () => {
      given([...aRunningExecution(), leaseExtended({ at: 11_000 })])
        .when(heartbeat({ at: 21_000 }))
        .then([leaseExtended({ at: 21_000 })]);
    });

    it('accepts a heartbeat after the first lease ran out as long as an extension still holds', () => {
      given([...aRunningExecution(), leaseExtended({ at: 25_000 })])
        .when(heartbeat({ at: 40_000 }))
        .then([leaseExtended({ at: 40_000 })]);
    });

    it('accepts a heartbeat one millisecond before the lease expires', () => {
      given(aRunningExecution())
        .when(heartbeat({ at: 30_999 }))
        .then([leaseExtended({ at: 30_999 })]);
    });
  });

  describe('when the heartbeat does not carry the current claim (promise 3)', () => {
    it('rejects another worker', () => {
      given(aRunningExecution())
        .when(heartbeat({ workerId: WORKER_B, at: 11_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a wrong fencing token', () => {
      given(aRunningExecution())
        .when(heartbeat({ fencingToken: 2, at: 11_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects an attempt nobody has claimed yet', () => {
      given(aQueuedExecution())
        .when(heartbeat({ at: 11_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects the claim of an attempt superseded by a retry', () => {
      given(aRetryScheduled())
        .when(heartbeat({ attemptId: ATTEMPT_1, at: 5_500 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects the old fencing token on the retry attempt', () => {
      given([...aRetryScheduled(), attemptClaimed({ attemptId: ATTEMPT_2, workerId: WORKER_A, fencingToken: 2, at: 7_000 })])
        .when(heartbeat({ attemptId: ATTEMPT_2, workerId: WORKER_A, fencingToken: 1, at: 8_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a heartbeat for an attempt that already succeeded, for good: an ended attempt never runs again', () => {
      given([...aRunningExecution(), attemptSucceeded({ at: 5_000, output: null }), executionSucceeded({ at: 5_000, output: null })])
        .when(heartbeat({ at: 6_000 }))
        .thenThrows(StaleAttemptError, (error) => expect(error.final).toBe(true));
    });

    it('does not refuse for good a fencing token the running attempt does not carry (yet)', () => {
      given(aRunningExecution())
        .when(heartbeat({ fencingToken: 2, at: 11_000 }))
        .thenThrows(StaleAttemptError, (error) => expect(error.final).toBe(false));
    });
  });

  describe('when the lease has expired (promise 4)', () => {
    it('rejects a heartbeat at leaseExpiresAt although no time-out was recorded', () => {
      given(aRunningExecution())
        .when(heartbeat({ at: 31_000 }))
        .thenThrows(LeaseExpiredError);
    });

    it('rejects a heartbeat after leaseExpiresAt although no time-out was recorded', () => {
      given(aRunningExecution())
        .when(heartbeat({ at: 45_000 }))
        .thenThrows(LeaseExpiredError);
    });

    it('rejects a heartbeat after an extended lease ran out', () => {
      given([...aRunningExecution(), leaseExtended({ at: 20_000 })])
        .when(heartbeat({ at: 50_000 }))
        .thenThrows(LeaseExpiredError);
    });
  });

  describe('when the attempt timed out', () => {
    const timedOut = [
      ...aRunningExecution(),
      attemptTimedOut({ at: 31_000, reason: 'lease_expired', deadline: 31_000 }),
      executionTimedOut({ at: 31_000 }),
    ];

    it('never brings the attempt back to life: the late heartbeat is told its lease expired, for good', () => {
      given(timedOut)
        .when(heartbeat({ at: 32_000 }))
        .thenThrows(LeaseExpiredError, (error) => expect(error.final).toBe(true));
    });

    it('rejects the late heartbeat also when a retry took the attempt over', () => {
      const workflow = aWorkflow({ retry: THREE_ATTEMPTS });
      given([
        ...aRunningExecution({ workflow }),
        attemptTimedOut({ at: 31_000, reason: 'lease_expired', deadline: 31_000 }),
        attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 31_000, notBefore: 32_000 }),
      ])
        .when(heartbeat({ at: 32_000 }))
        .thenThrows(LeaseExpiredError);
    });

    it('rejects another worker pretending to hold the timed-out attempt as stale', () => {
      given(timedOut)
        .when(heartbeat({ workerId: WORKER_B, at: 32_000 }))
        .thenThrows(StaleAttemptError);
    });
  });

  describe('when the execution does not exist', () => {
    it('rejects the heartbeat as not found', () => {
      given([])
        .when(heartbeat({ at: 1_000 }))
        .thenThrows(NotFoundError);
    });
  });
});
