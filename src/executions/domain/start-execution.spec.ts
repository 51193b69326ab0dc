import { describe, expect, it } from '@jest/globals';
import { executionDecider } from './execution.decider.js';
import { IdempotencyConflictError, InvalidStateError } from '../../core/errors.js';
import {
  ATTEMPT_1,
  EXECUTION_ID,
  OPERATOR,
  WORKSPACE_ID,
  aQueuedExecution,
  aWorkflow,
  attemptClaimed,
  attemptScheduled,
  executionStarted,
  given,
  iso,
  startExecution,
} from '../../../test/support/executions/execution-fixtures.js';

const KEY = { key: 'start-key-1', fingerprint: 'fingerprint-of-body-1' };

describe('StartExecution', () => {
  describe('when the execution does not exist yet', () => {
    it('records the start with a snapshot of the workflow, the input and who started it', () => {
      const workflow = aWorkflow();
      given([])
        .when(startExecution({ at: 5_000, idempotency: KEY, workflow }))
        .then([
          {
            type: 'ExecutionStarted',
            data: {
              executionId: EXECUTION_ID,
              workspaceId: WORKSPACE_ID,
              workflow,
              input: { day: '2029-12-31' },
              idempotency: { key: 'start-key-1', fingerprint: 'fingerprint-of-body-1' },
              startedBy: OPERATOR,
              startedAt: iso(5_000),
            },
          },
          {
            type: 'AttemptScheduled',
            data: {
              attemptId: ATTEMPT_1,
              attemptNumber: 1,
              reason: 'start',
              notBefore: iso(5_000),
              queueDeadline: iso(65_000),
              scheduledAt: iso(5_000),
            },
          },
        ]);
    });

    it('schedules attempt 1 due at once, with a queue deadline queueMs from now', () => {
      const workflow = aWorkflow({ timeouts: { queueMs: 2_500 } });
      given([])
        .when(startExecution({ at: 1_000, workflow }))
        .then([executionStarted({ at: 1_000, workflow }), attemptScheduled({ at: 1_000, queueMs: 2_500 })]);
    });

    it('records no idempotency key when the request carried none', () => {
      given([])
        .when(startExecution({ at: 0, idempotency: null }))
        .then([executionStarted({ idempotency: null }), attemptScheduled()]);
    });
  });

  describe('when it was started with the same Idempotency-Key (promise 2)', () => {
    it('treats the same request again as a replay and records nothing', () => {
      given(aQueuedExecution({ idempotency: KEY }))
        .when(startExecution({ at: 9_000, idempotency: KEY }))
        .thenNothingHappens();
    });

    it('still replays once the execution has moved on', () => {
      given([...aQueuedExecution({ idempotency: KEY }), attemptClaimed({ at: 1_000 })])
        .when(startExecution({ at: 9_000, idempotency: KEY }))
        .thenNothingHappens();
    });

    it('rejects another request body under the same key', () => {
      given(aQueuedExecution({ idempotency: KEY }))
        .when(startExecution({ at: 9_000, idempotency: { key: KEY.key, fingerprint: 'fingerprint-of-body-2' } }))
        .thenThrows(IdempotencyConflictError);
    });
  });

  describe('when the stream exists without a matching key', () => {
    it('rejects a start with another key', () => {
      given(aQueuedExecution({ idempotency: KEY }))
        .when(startExecution({ at: 9_000, idempotency: { key: 'start-key-2', fingerprint: KEY.fingerprint } }))
        .thenThrows(InvalidStateError);
    });

    it('rejects a start without a key', () => {
      given(aQueuedExecution({ idempotency: KEY }))
        .when(startExecution({ at: 9_000, idempotency: null }))
        .thenThrows(InvalidStateError);
    });

    it('rejects a keyed start of an execution that was started without a key', () => {
      given(aQueuedExecution({ idempotency: null }))
        .when(startExecution({ at: 9_000, idempotency: KEY }))
        .thenThrows(InvalidStateError);
    });
  });

  describe('a start by a schedule fire', () => {
    const fire = { schedule: 'nightly', fireTime: '2030-01-01T02:30:00.000Z' };
    const scheduled = (at: number, scheduledBy = fire) => {
      const command = startExecution({ at });
      return { ...command, data: { ...command.data, scheduledBy } };
    };

    it('records which fire started it', () => {
      const [started] = scheduleFold(scheduled(5_000));
      expect(started.data).toMatchObject({ scheduledBy: fire });
    });

    it('is a replay when the same fire starts it again (a second scheduler)', () => {
      given(scheduleFold(scheduled(5_000)))
        .when(scheduled(6_000))
        .thenNothingHappens();
    });

    it('rejects another fire on the same stream', () => {
      given(scheduleFold(scheduled(5_000)))
        .when(scheduled(6_000, { ...fire, fireTime: '2030-01-02T02:30:00.000Z' }))
        .thenThrows(InvalidStateError);
    });
  });
});

/** The events of a start decided on an empty stream. */
function scheduleFold(command: ReturnType<typeof startExecution>) {
  return executionDecider.decide(command, executionDecider.initialState());
}
