import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { InvalidStateError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import { awaitsSlot, holdsSlot } from './admit-execution.js';
import { executionDecider } from './execution.decider.js';
import type { ExecutionEvent } from './execution.events.js';
import type { StartedExecution } from './execution.state.js';
import { executionDeadline } from './time-out-execution.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  FAILURE,
  aFailedExecution,
  aWaitingExecution,
  aWorkflow,
  admitExecution,
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  attemptSucceeded,
  cancelRequested,
  claimAttempt,
  executionAwaitingSlot,
  executionCancelled,
  executionStarted,
  executionSucceeded,
  given,
  iso,
  redriveRequested,
  requestCancel,
  requestRedrive,
  startExecution,
  timeOutExecution,
} from '../../../test/support/executions/execution-fixtures.js';

const KEY = { key: 'start-key-1', fingerprint: 'fingerprint-of-body-1' };
const stateOf = (events: ExecutionEvent[]) => fold(executionDecider, events) as StartedExecution;

/** Waited from 0; admitted at 40 000 (attempt 1 queued until 40 000 + queueMs). */
const anAdmittedExecution = (): ExecutionEvent[] => [...aWaitingExecution(), attemptScheduled({ at: 40_000 })];

describe('StartExecution in a workspace with a concurrency bound', () => {
  it('records the start and that attempt 1 waits for a quota slot, instead of scheduling it', () => {
    given([])
      .when(startExecution({ at: 5_000, waitFor: 'workspace_quota' }))
      .then([
        executionStarted({ at: 5_000 }),
        {
          type: 'ExecutionAwaitingSlot',
          data: { attemptId: ATTEMPT_1, attemptNumber: 1, reason: 'start', waitingFor: 'workspace_quota', at: iso(5_000) },
        },
      ]);
  });

  it('leaves the execution queued, waiting for the workspace quota, with no attempt yet', () => {
    expect(stateOf(aWaitingExecution())).toMatchObject({
      status: 'queued',
      attempts: [],
      awaitingSlot: { attemptId: ATTEMPT_1, attemptNumber: 1, reason: 'start', waitingFor: 'workspace_quota', since: iso(0) },
      slotAttemptId: null,
    });
  });

  it('records nothing for the same Idempotency-Key and body again, whatever the bound says now', () => {
    given([executionStarted({ idempotency: KEY }), executionAwaitingSlot()])
      .when(startExecution({ at: 1_000, idempotency: KEY }))
      .thenNothingHappens();
  });
});

describe('AdmitExecution', () => {
  describe('when the run waits for a slot', () => {
    it('schedules the attempt it waits with, due now, its queue deadline counted from the admission', () => {
      given(aWaitingExecution())
        .when(admitExecution({ at: 40_000 }))
        .then([attemptScheduled({ at: 40_000 })]);
    });

    it('takes the run out of the wait: it holds its slot from now on', () => {
      const state = stateOf(anAdmittedExecution());
      expect(state).toMatchObject({ status: 'queued', awaitingSlot: null, slotAttemptId: ATTEMPT_1 });
      expect(holdsSlot(state, ATTEMPT_1)).toBe(true);
      expect(awaitsSlot(state, ATTEMPT_1)).toBe(false);
    });

    it('records nothing for another attempt than the one the run waits with', () => {
      given(aWaitingExecution())
        .when(admitExecution({ attemptId: ATTEMPT_2, at: 40_000 }))
        .thenNothingHappens();
    });
  });

  describe('when the run waits no more', () => {
    it('records nothing for a second admission (a retried or concurrent pass)', () => {
      given(anAdmittedExecution())
        .when(admitExecution({ at: 41_000 }))
        .thenNothingHappens();
    });

    it('records nothing for a run cancelled while it waited', () => {
      given([...aWaitingExecution(), cancelRequested({ at: 500 }), executionCancelled({ at: 500 })])
        .when(admitExecution({ at: 40_000 }))
        .thenNothingHappens();
    });

    it('rejects an execution that does not exist', () => {
      given([])
        .when(admitExecution({ at: 0 }))
        .thenThrows(NotFoundError);
    });
  });
});

describe('a run that waits for a slot', () => {
  it('cannot be claimed: no attempt is scheduled', () => {
    given(aWaitingExecution())
      .when(claimAttempt({ at: 1_000 }))
      .thenThrows(StaleAttemptError);
  });

  it('is cancelled at once, and neither waits nor holds a slot afterwards', () => {
    given(aWaitingExecution())
      .when(requestCancel({ reason: 'not needed', at: 500 }))
      .then([cancelRequested({ reason: 'not needed', at: 500 }), executionCancelled({ reason: 'not needed', at: 500 })]);
    const cancelled = stateOf([...aWaitingExecution(), cancelRequested({ at: 500 }), executionCancelled({ at: 500 })]);
    expect(cancelled).toMatchObject({ status: 'cancelled', awaitingSlot: null });
    expect(awaitsSlot(cancelled, ATTEMPT_1)).toBe(false);
    expect(holdsSlot(cancelled, ATTEMPT_1)).toBe(false);
  });

  it('times out at its execution deadline, counted from the start: the wait spends the budget', () => {
    const workflow = aWorkflow({ timeouts: { executionMs: 100_000 } });
    const waiting = [executionStarted({ workflow }), executionAwaitingSlot()];
    expect(executionDeadline(stateOf(waiting))).toBe(iso(100_000));
    given(waiting)
      .when(timeOutExecution({ at: 99_999 }))
      .thenThrows(InvalidStateError);
    given(waiting)
      .when(timeOutExecution({ at: 100_000 }))
      .then([{ type: 'ExecutionTimedOut', data: { reason: 'execution deadline passed', at: iso(100_000) } }]);
  });

  it('cannot be redriven: it has not ended', () => {
    given(aWaitingExecution())
      .when(requestRedrive({ at: 1_000 }))
      .thenThrows(InvalidStateError);
  });
});

describe('the slot of an admitted run', () => {
  it('is held across a failed attempt whose retry is scheduled', () => {
    const workflow = aWorkflow({
      retry: { maxAttempts: 2, initialIntervalMs: 0, backoffCoefficient: 1, maxIntervalMs: 0, nonRetryable: [] },
    });
    const retrying = stateOf([
      executionStarted({ workflow }),
      executionAwaitingSlot(),
      attemptScheduled({ at: 40_000 }),
      attemptClaimed({ at: 41_000 }),
      attemptFailed({ at: 42_000, error: FAILURE }),
      attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 42_000 }),
    ]);
    expect(holdsSlot(retrying, ATTEMPT_1)).toBe(true);
  });

  it('is given up when the execution ends', () => {
    const succeeded = stateOf([
      ...anAdmittedExecution(),
      attemptClaimed({ at: 41_000 }),
      attemptSucceeded({ at: 42_000, output: null }),
      executionSucceeded({ at: 42_000, output: null }),
    ]);
    expect(holdsSlot(succeeded, ATTEMPT_1)).toBe(false);
  });
});

describe('RequestRedrive in a workspace with a concurrency bound', () => {
  it('records the redrive and that the new run waits for a slot, instead of scheduling its attempt', () => {
    given(aFailedExecution())
      .when(requestRedrive({ at: 10_000, waitFor: 'workspace_quota' }))
      .then([
        redriveRequested({ at: 10_000, attemptNumber: 2 }),
        executionAwaitingSlot({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 10_000 }),
      ]);
  });

  const redrivenAndWaiting = (): ExecutionEvent[] => [
    ...aFailedExecution(),
    redriveRequested({ at: 10_000, attemptNumber: 2 }),
    executionAwaitingSlot({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 10_000 }),
  ];

  it('is queued again, waiting, and the slot of the earlier run is not its', () => {
    const state = stateOf(redrivenAndWaiting());
    expect(state).toMatchObject({ status: 'queued', awaitingSlot: { attemptId: ATTEMPT_2, reason: 'redrive' }, slotAttemptId: null });
    expect(awaitsSlot(state, ATTEMPT_2)).toBe(true);
    expect(holdsSlot(state, ATTEMPT_1)).toBe(false);
  });

  it('is admitted with a redrive attempt; its execution deadline counts from the redrive, not the admission', () => {
    given(redrivenAndWaiting())
      .when(admitExecution({ attemptId: ATTEMPT_2, at: 50_000 }))
      .then([attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 50_000 })]);
    const admitted = stateOf([
      ...redrivenAndWaiting(),
      attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 50_000 }),
    ]);
    expect(executionDeadline(admitted)).toBe(iso(10_000 + 3_600_000));
    expect(holdsSlot(admitted, ATTEMPT_2)).toBe(true);
  });

  it('a redrive without a bound schedules its attempt at once, as before', () => {
    given(aFailedExecution())
      .when(requestRedrive({ at: 10_000 }))
      .then([
        redriveRequested({ at: 10_000, attemptNumber: 2 }),
        attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'redrive', at: 10_000 }),
      ]);
  });
});
