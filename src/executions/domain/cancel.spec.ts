import { describe, it } from '@jest/globals';
import { InvalidStateError, NotFoundError } from '../../core/errors.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  OPERATOR,
  aFailedExecution,
  aQueuedExecution,
  aRetryScheduled,
  aRunningExecution,
  attemptCancelled,
  attemptSucceeded,
  attemptTimedOut,
  cancelRequested,
  executionCancelled,
  executionSucceeded,
  executionTimedOut,
  given,
  heartbeat,
  iso,
  leaseExtended,
  requestCancel,
} from '../../../test/support/executions/execution-fixtures.js';

describe('RequestCancel (promise 7)', () => {
  describe('when the attempt is queued', () => {
    it('records the request and cancels the attempt and the execution at once, in one write', () => {
      given(aQueuedExecution())
        .when(requestCancel({ reason: 'wrong input', at: 500 }))
        .then([
          { type: 'CancelRequested', data: { reason: 'wrong input', requestedBy: OPERATOR, at: iso(500) } },
          { type: 'AttemptCancelled', data: { attemptId: ATTEMPT_1, at: iso(500) } },
          { type: 'ExecutionCancelled', data: { reason: 'wrong input', at: iso(500) } },
        ]);
    });

    it('accepts a cancel without a reason', () => {
      given(aQueuedExecution())
        .when(requestCancel({ reason: null, at: 500 }))
        .then([cancelRequested({ reason: null, at: 500 }), attemptCancelled({ at: 500 }), executionCancelled({ reason: null, at: 500 })]);
    });

    it('cancels a retry that waits for its backoff at once', () => {
      given(aRetryScheduled())
        .when(requestCancel({ at: 5_500 }))
        .then([cancelRequested({ at: 5_500 }), attemptCancelled({ attemptId: ATTEMPT_2, at: 5_500 }), executionCancelled({ at: 5_500 })]);
    });
  });

  describe('when the attempt is running', () => {
    const running = aRunningExecution();

    it('only records the request: the worker learns it from its next heartbeat', () => {
      given(running)
        .when(requestCancel({ at: 3_000 }))
        .then([cancelRequested({ at: 3_000 })]);
    });

    it('still accepts the following heartbeat, which extends the lease', () => {
      given([...running, cancelRequested({ at: 3_000 })])
        .when(heartbeat({ at: 4_000 }))
        .then([leaseExtended({ at: 4_000 })]);
    });

    it('records nothing for a second cancel', () => {
      given([...running, cancelRequested({ at: 3_000 })])
        .when(requestCancel({ reason: 'again', at: 4_000 }))
        .thenNothingHappens();
    });
  });

  describe('when the execution has ended', () => {
    it('records nothing when it is already cancelled', () => {
      given([...aQueuedExecution(), cancelRequested({ at: 500 }), attemptCancelled({ at: 500 }), executionCancelled({ at: 500 })])
        .when(requestCancel({ at: 1_000 }))
        .thenNothingHappens();
    });

    it('rejects cancelling a succeeded execution', () => {
      given([...aRunningExecution(), attemptSucceeded({ at: 5_000, output: null }), executionSucceeded({ at: 5_000, output: null })])
        .when(requestCancel({ at: 6_000 }))
        .thenThrows(InvalidStateError);
    });

    it('rejects cancelling a failed execution', () => {
      given(aFailedExecution())
        .when(requestCancel({ at: 6_000 }))
        .thenThrows(InvalidStateError);
    });

    it('rejects cancelling a timed-out execution', () => {
      given([
        ...aQueuedExecution(),
        attemptTimedOut({ at: 60_000, reason: 'queue_deadline', deadline: 60_000 }),
        executionTimedOut({ at: 60_000 }),
      ])
        .when(requestCancel({ at: 61_000 }))
        .thenThrows(InvalidStateError);
    });
  });

  describe('when the execution does not exist', () => {
    it('rejects the cancel as not found', () => {
      given([])
        .when(requestCancel({ at: 500 }))
        .thenThrows(NotFoundError);
    });
  });
});
