import { describe, it } from '@jest/globals';
import { InvalidStateError, LeaseExpiredError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import type { ExecutionEvent } from './execution.events.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  FAILURE,
  THREE_ATTEMPTS,
  WORKER_B,
  aFailedExecution,
  aRetryScheduled,
  aRunningExecution,
  aWorkflow,
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  attemptSucceeded,
  executionFailed,
  executionSucceeded,
  given,
  iso,
  nodeFailed,
  nodeSkipped,
  nodeStarted,
  nodeSucceeded,
  recordNodeResult,
  redriveRequested,
} from '../../../test/support/executions/execution-fixtures.js';

const ROWS = { rows: [1, 2, 3] };

/** Attempt 2 of THREE_ATTEMPTS, claimed by worker B with token 2, after `extract` succeeded and `load` failed in attempt 1. */
const retryAfterPartialProgress = (): ExecutionEvent[] => [
  ...aRunningExecution({ workflow: aWorkflow({ retry: THREE_ATTEMPTS }) }),
  nodeStarted({ nodeId: 'extract', at: 2_000 }),
  nodeSucceeded({ nodeId: 'extract', output: ROWS, at: 3_000 }),
  nodeStarted({ nodeId: 'load', at: 3_000 }),
  nodeFailed({ nodeId: 'load', error: FAILURE, at: 4_000 }),
  attemptFailed({ at: 5_000, error: FAILURE }),
  attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 5_000, notBefore: 6_000 }),
  attemptClaimed({ attemptId: ATTEMPT_2, workerId: WORKER_B, fencingToken: 2, at: 7_000 }),
];
const attempt2 = { attemptId: ATTEMPT_2, workerId: WORKER_B, fencingToken: 2 };

describe('RecordNodeResult', () => {
  describe('when the worker holds the live claim', () => {
    it('records that a node started', () => {
      given(aRunningExecution())
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'extract', at: 2_000 }))
        .then([{ type: 'NodeStarted', data: { attemptId: ATTEMPT_1, nodeId: 'extract', at: iso(2_000) } }]);
    });

    it('records that a node succeeded, with its output', () => {
      given([...aRunningExecution(), nodeStarted({ nodeId: 'extract', at: 2_000 })])
        .when(recordNodeResult({ kind: 'node_succeeded', nodeId: 'extract', output: ROWS, at: 3_000 }))
        .then([{ type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'extract', output: ROWS, at: iso(3_000) } }]);
    });

    it('records a null output when the worker sent none', () => {
      given(aRunningExecution())
        .when(recordNodeResult({ kind: 'node_succeeded', nodeId: 'extract', at: 3_000 }))
        .then([nodeSucceeded({ nodeId: 'extract', output: null, at: 3_000 })]);
    });

    it('records that a node failed, with its error', () => {
      given(aRunningExecution())
        .when(recordNodeResult({ kind: 'node_failed', nodeId: 'load', error: FAILURE, at: 3_000 }))
        .then([nodeFailed({ nodeId: 'load', error: FAILURE, at: 3_000 })]);
    });

    it('records that a node was skipped, with the reason', () => {
      given(aRunningExecution())
        .when(recordNodeResult({ kind: 'node_skipped', nodeId: 'load', reason: 'branch not taken', at: 3_000 }))
        .then([nodeSkipped({ nodeId: 'load', reason: 'branch not taken', at: 3_000 })]);
    });
  });

  describe('when the same result is delivered again', () => {
    it('records nothing for a node start already recorded', () => {
      given([...aRunningExecution(), nodeStarted({ nodeId: 'extract', at: 2_000 })])
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'extract', at: 2_500 }))
        .thenNothingHappens();
    });

    it('records nothing for a node success already recorded', () => {
      given([...aRunningExecution(), nodeSucceeded({ nodeId: 'extract', output: ROWS, at: 3_000 })])
        .when(recordNodeResult({ kind: 'node_succeeded', nodeId: 'extract', output: ROWS, at: 3_500 }))
        .thenNothingHappens();
    });

    it('records nothing for a start redelivered after the node already succeeded, which keeps its output', () => {
      given([
        ...aRunningExecution(),
        nodeStarted({ nodeId: 'extract', at: 2_000 }),
        nodeSucceeded({ nodeId: 'extract', output: ROWS, at: 3_000 }),
      ])
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'extract', at: 3_500 }))
        .thenNothingHappens();
    });

    it('records nothing for a result redelivered after the attempt ended', () => {
      given([
        ...aRunningExecution(),
        nodeSucceeded({ nodeId: 'extract', output: ROWS, at: 3_000 }),
        attemptSucceeded({ at: 5_000, output: ROWS }),
        executionSucceeded({ at: 5_000, output: ROWS }),
      ])
        .when(recordNodeResult({ kind: 'node_succeeded', nodeId: 'extract', output: ROWS, at: 90_000 }))
        .thenNothingHappens();
    });
  });

  describe('when the result does not carry the live claim (promise 3)', () => {
    it('rejects another worker', () => {
      given(aRunningExecution())
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'extract', workerId: WORKER_B, at: 2_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a wrong fencing token', () => {
      given(aRunningExecution())
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'extract', fencingToken: 2, at: 2_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects the claim of an attempt a retry superseded', () => {
      given(aRetryScheduled())
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'extract', at: 5_500 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a new result after the attempt ended', () => {
      given(aFailedExecution())
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'extract', at: 6_000 }))
        .thenThrows(StaleAttemptError);
    });

    it('rejects a result after the lease expired although no time-out was recorded (promise 4)', () => {
      given(aRunningExecution())
        .when(recordNodeResult({ kind: 'node_succeeded', nodeId: 'extract', output: ROWS, at: 31_000 }))
        .thenThrows(LeaseExpiredError);
    });
  });

  describe('when a node already has a final result in this attempt', () => {
    it('rejects a contradicting result', () => {
      given([
        ...aRunningExecution(),
        nodeStarted({ nodeId: 'extract', at: 2_000 }),
        nodeSucceeded({ nodeId: 'extract', output: ROWS, at: 3_000 }),
      ])
        .when(recordNodeResult({ kind: 'node_failed', nodeId: 'extract', error: FAILURE, at: 4_000 }))
        .thenThrows(InvalidStateError);
    });
  });

  describe('when the node is not in the workflow', () => {
    it('rejects the result', () => {
      given(aRunningExecution())
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'publish', at: 2_000 }))
        .thenThrows(InvalidStateError);
    });
  });

  describe('when a node succeeded in an earlier attempt (durable resume)', () => {
    it('does not record it again', () => {
      given(retryAfterPartialProgress())
        .when(recordNodeResult({ ...attempt2, kind: 'node_started', nodeId: 'extract', at: 8_000 }))
        .thenThrows(InvalidStateError);
    });

    it('records the node that failed earlier when it runs again', () => {
      given(retryAfterPartialProgress())
        .when(recordNodeResult({ ...attempt2, kind: 'node_started', nodeId: 'load', at: 8_000 }))
        .then([nodeStarted({ attemptId: ATTEMPT_2, nodeId: 'load', at: 8_000 })]);
    });

    it('does not record it again after a redrive either', () => {
      given([
        ...aRunningExecution(),
        nodeSucceeded({ nodeId: 'extract', output: ROWS, at: 3_000 }),
        attemptFailed({ at: 5_000, error: FAILURE }),
        executionFailed({ at: 5_000, error: FAILURE }),
        redriveRequested({ at: 9_000, attemptNumber: 2 }),
        attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 9_000 }),
        attemptClaimed({ ...attempt2, at: 10_000 }),
      ])
        .when(recordNodeResult({ ...attempt2, kind: 'node_succeeded', nodeId: 'extract', output: { rows: [] }, at: 11_000 }))
        .thenThrows(InvalidStateError);
    });
  });

  describe('when the execution does not exist', () => {
    it('rejects the result as not found', () => {
      given([])
        .when(recordNodeResult({ kind: 'node_started', nodeId: 'extract', at: 2_000 }))
        .thenThrows(NotFoundError);
    });
  });
});
