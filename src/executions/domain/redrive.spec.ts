import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { IdempotencyConflictError, InvalidStateError, NotFoundError } from '../../core/errors.js';
import { executionDecider } from './execution.decider.js';
import type { ExecutionEvent } from './execution.events.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  ATTEMPT_3,
  ATTEMPT_4,
  ATTEMPT_5,
  FAILURE,
  OPERATOR,
  REDRIVE_1,
  REDRIVE_2,
  THREE_ATTEMPTS,
  WORKER_A,
  WORKER_B,
  aFailedExecution,
  aQueuedExecution,
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
  nodeSucceeded,
  redriveRequested,
  requestCancel,
  requestRedrive,
} from '../../../test/support/executions/execution-fixtures.js';

const redrivenOnce = (base: ExecutionEvent[], attemptNumber: number): ExecutionEvent[] => [
  ...base,
  redriveRequested({ at: 10_000, attemptNumber }),
  attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber, reason: 'redrive', at: 10_000 }),
];

describe('RequestRedrive', () => {
  describe('when the execution failed', () => {
    it('records the redrive and schedules the next attempt number, due at once', () => {
      given(aFailedExecution())
        .when(
          requestRedrive({ redriveId: REDRIVE_1, idempotencyKey: 'redrive-key-1', fingerprint: 'fp-1', attemptId: ATTEMPT_2, at: 10_000 }),
        )
        .then([
          {
            type: 'RedriveRequested',
            data: {
              redriveId: REDRIVE_1,
              idempotencyKey: 'redrive-key-1',
              requestFingerprint: 'fp-1',
              attemptId: ATTEMPT_2,
              attemptNumber: 2,
              requestedBy: OPERATOR,
              at: iso(10_000),
            },
          },
          {
            type: 'AttemptScheduled',
            data: {
              attemptId: ATTEMPT_2,
              attemptNumber: 2,
              reason: 'redrive',
              notBefore: iso(10_000),
              queueDeadline: iso(70_000),
              scheduledAt: iso(10_000),
            },
          },
        ]);
    });
  });

  describe('when the execution timed out', () => {
    it('schedules a redriven attempt', () => {
      given([
        ...aQueuedExecution(),
        attemptTimedOut({ at: 60_000, reason: 'queue_deadline', deadline: 60_000 }),
        executionTimedOut({ at: 60_000 }),
      ])
        .when(requestRedrive({ at: 70_000 }))
        .then([
          redriveRequested({ at: 70_000, attemptNumber: 2 }),
          attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 70_000 }),
        ]);
    });
  });

  describe('when the execution was cancelled', () => {
    const cancelled = [
      ...aRunningExecution(),
      cancelRequested({ at: 3_000 }),
      attemptCancelled({ at: 4_000 }),
      executionCancelled({ at: 4_000 }),
    ];

    it('schedules a redriven attempt', () => {
      given(cancelled)
        .when(requestRedrive({ at: 10_000 }))
        .then([
          redriveRequested({ at: 10_000, attemptNumber: 2 }),
          attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 10_000 }),
        ]);
    });

    it('forgets the old cancel request: a new cancel is recorded again', () => {
      given(redrivenOnce(cancelled, 2))
        .when(requestCancel({ at: 11_000 }))
        .then([
          cancelRequested({ at: 11_000 }),
          attemptCancelled({ attemptId: ATTEMPT_2, at: 11_000 }),
          executionCancelled({ at: 11_000 }),
        ]);
    });
  });

  describe('when the execution has not ended in failure, time-out or cancellation', () => {
    it('rejects redriving a queued execution', () => {
      given(aQueuedExecution())
        .when(requestRedrive({ at: 10_000 }))
        .thenThrows(InvalidStateError);
    });

    it('rejects redriving a running execution', () => {
      given(aRunningExecution())
        .when(requestRedrive({ at: 10_000 }))
        .thenThrows(InvalidStateError);
    });

    it('rejects redriving a succeeded execution', () => {
      given([...aRunningExecution(), attemptSucceeded({ at: 5_000, output: null }), executionSucceeded({ at: 5_000, output: null })])
        .when(requestRedrive({ at: 10_000 }))
        .thenThrows(InvalidStateError);
    });

    it('rejects redriving an execution that does not exist', () => {
      given([])
        .when(requestRedrive({ at: 10_000 }))
        .thenThrows(NotFoundError);
    });
  });

  describe('when the Idempotency-Key was used before (promise 2)', () => {
    const redriven = redrivenOnce(aFailedExecution(), 2);

    it('treats the same request as a replay and records nothing, although the execution is queued again', () => {
      given(redriven)
        .when(requestRedrive({ redriveId: REDRIVE_2, attemptId: ATTEMPT_3, at: 12_000 }))
        .thenNothingHappens();
    });

    it('rejects another request body under the same key', () => {
      given(redriven)
        .when(requestRedrive({ fingerprint: 'fingerprint-redrive-2', at: 12_000 }))
        .thenThrows(IdempotencyConflictError);
    });

    it('accepts a new key once the redriven run failed again, continuing the attempt numbers', () => {
      given([
        ...redriven,
        attemptClaimed({ attemptId: ATTEMPT_2, fencingToken: 2, at: 11_000 }),
        attemptFailed({ attemptId: ATTEMPT_2, at: 12_000, error: FAILURE }),
        executionFailed({ at: 12_000, error: FAILURE }),
      ])
        .when(requestRedrive({ redriveId: REDRIVE_2, idempotencyKey: 'redrive-key-2', attemptId: ATTEMPT_3, at: 13_000 }))
        .then([
          redriveRequested({ redriveId: REDRIVE_2, idempotencyKey: 'redrive-key-2', attemptId: ATTEMPT_3, attemptNumber: 3, at: 13_000 }),
          attemptScheduled({ attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'redrive', at: 13_000 }),
        ]);
    });
  });

  describe('after a redrive', () => {
    const workflow = aWorkflow({ retry: THREE_ATTEMPTS });
    /** Three attempts used up under THREE_ATTEMPTS, then redriven as attempt 4 and claimed with token 4. */
    const exhaustedThenRedriven: ExecutionEvent[] = [
      ...aRunningExecution({ workflow }),
      nodeSucceeded({ nodeId: 'extract', output: { rows: 3 }, at: 2_000 }),
      attemptFailed({ at: 5_000, error: FAILURE }),
      attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 5_000, notBefore: 6_000 }),
      attemptClaimed({ attemptId: ATTEMPT_2, workerId: WORKER_B, fencingToken: 2, at: 7_000 }),
      attemptFailed({ attemptId: ATTEMPT_2, at: 8_000, error: FAILURE }),
      attemptScheduled({ attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'retry', at: 8_000, notBefore: 10_000 }),
      attemptClaimed({ attemptId: ATTEMPT_3, workerId: WORKER_A, fencingToken: 3, at: 11_000 }),
      attemptFailed({ attemptId: ATTEMPT_3, at: 12_000, error: FAILURE }),
      executionFailed({ at: 12_000, error: FAILURE }),
      redriveRequested({ at: 20_000, attemptNumber: 4, attemptId: ATTEMPT_4 }),
      attemptScheduled({ attemptId: ATTEMPT_4, attemptNumber: 4, reason: 'redrive', at: 20_000 }),
      attemptClaimed({ attemptId: ATTEMPT_4, workerId: WORKER_A, fencingToken: 4, at: 21_000 }),
    ];

    it('gives the retry budget back: a failure of the redriven attempt is retried', () => {
      given(exhaustedThenRedriven)
        .when(
          completeAttempt({
            attemptId: ATTEMPT_4,
            fencingToken: 4,
            outcome: 'failed',
            error: FAILURE,
            nextAttemptId: ATTEMPT_5,
            at: 22_000,
          }),
        )
        .then([
          attemptFailed({ attemptId: ATTEMPT_4, at: 22_000, error: FAILURE }),
          attemptScheduled({ attemptId: ATTEMPT_5, attemptNumber: 5, reason: 'retry', at: 22_000, notBefore: 23_000 }),
        ]);
    });

    it('keeps the nodes that succeeded before as succeeded, with their output (durable resume)', () => {
      const state = fold(executionDecider, exhaustedThenRedriven);
      expect(state).toMatchObject({
        status: 'running',
        attemptsInRun: 1,
        nodes: { extract: { nodeId: 'extract', attemptId: ATTEMPT_1, status: 'succeeded', output: { rows: 3 } } },
      });
    });
  });
});
