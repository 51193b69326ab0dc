import { describe, expect, it } from '@jest/globals';
import type { ExecutionEvent } from '../../src/executions/domain/execution.events.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  EXECUTION_ID,
  FAILURE,
  LEASE_MS,
  QUEUE_MS,
  T0,
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  attemptTimedOut,
  executionFailed,
  executionStarted,
  executionTimedOut,
  leaseExtended,
  redriveRequested,
} from '../support/executions/execution-fixtures.js';
import { planDeadlines } from '../../src/watchdog/application/deadline-plan.js';

const plan = (events: ExecutionEvent[], runDeadlines = new Map<string, number | null>()) =>
  planDeadlines(
    events.map((event) => ({ executionId: EXECUTION_ID, event })),
    runDeadlines,
  );

const EXECUTION_MS = 3_600_000;

describe('planning the deadlines of a batch', () => {
  it('watches the queue deadline of a new attempt and the execution deadline of a new execution', () => {
    expect(plan([executionStarted(), attemptScheduled()])).toEqual({
      taskUpserts: [],
      taskRemovals: [],
      upserts: [
        { executionId: EXECUTION_ID, kind: 'execution', attemptId: null, dueMs: T0 + EXECUTION_MS },
        { executionId: EXECUTION_ID, kind: 'attempt', attemptId: ATTEMPT_1, dueMs: T0 + QUEUE_MS },
      ],
      removals: [],
    });
  });

  it('follows the lease through claims and heartbeats, keeping only the last', () => {
    expect(plan([attemptClaimed({ at: 1_000 }), leaseExtended({ at: 20_000 })])).toEqual({
      taskUpserts: [],
      taskRemovals: [],
      upserts: [{ executionId: EXECUTION_ID, kind: 'attempt', attemptId: ATTEMPT_1, dueMs: T0 + 20_000 + LEASE_MS }],
      removals: [],
    });
  });

  it('removes an ended attempt only while the row is still that attempt', () => {
    expect(plan([attemptFailed({ at: 5_000, error: FAILURE })])).toEqual({
      taskUpserts: [],
      taskRemovals: [],
      upserts: [],
      removals: [{ executionId: EXECUTION_ID, kind: 'attempt', attemptId: ATTEMPT_1 }],
    });
  });

  it('replaces a timed-out attempt with its retry', () => {
    const events = [
      attemptTimedOut({ at: 31_000, reason: 'lease_expired', deadline: 31_000 }),
      attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 31_000 }),
    ];
    expect(plan(events).upserts).toEqual([
      { executionId: EXECUTION_ID, kind: 'attempt', attemptId: ATTEMPT_2, dueMs: T0 + 31_000 + QUEUE_MS },
    ]);
  });

  it('forgets everything of an execution that ended, even what the same batch added', () => {
    const events = [
      executionStarted(),
      attemptScheduled(),
      attemptTimedOut({ at: 60_000, reason: 'queue_deadline', deadline: 60_000 }),
      executionTimedOut({ at: 60_000 }),
    ];
    expect(plan(events)).toEqual({
      taskUpserts: [],
      taskRemovals: [],
      upserts: [],
      removals: [
        { executionId: EXECUTION_ID, kind: 'execution', attemptId: null },
        { executionId: EXECUTION_ID, kind: 'attempt', attemptId: null },
      ],
    });
  });

  it('watches a redriven run with the deadline read from its stream', () => {
    const events = [executionFailed({ at: 5_000, error: FAILURE }), redriveRequested({ at: 90_000, attemptNumber: 2 })];
    expect(plan(events, new Map([[EXECUTION_ID, T0 + 90_000 + EXECUTION_MS]])).upserts).toEqual([
      { executionId: EXECUTION_ID, kind: 'execution', attemptId: null, dueMs: T0 + 90_000 + EXECUTION_MS },
    ]);
  });

  it('watches a claimed task until its lease or its timeout, whichever comes first, and forgets it when it ends', () => {
    const taskId = `${EXECUTION_ID}.charge.1`;
    const claimed: ExecutionEvent = {
      type: 'TaskClaimed',
      data: {
        taskId,
        workerId: 'poller-1',
        fencingToken: 1,
        leaseExpiresAt: new Date(T0 + 30_000).toISOString(),
        timeoutAt: new Date(T0 + 60_000).toISOString(),
        claimedAt: new Date(T0).toISOString(),
      },
    };
    const extended: ExecutionEvent = {
      type: 'TaskLeaseExtended',
      data: { taskId, leaseExpiresAt: new Date(T0 + 40_000).toISOString(), at: new Date(T0 + 10_000).toISOString() },
    };
    // A heartbeat in the same batch keeps the claim's timeout.
    expect(plan([claimed, extended]).taskUpserts).toEqual([
      { taskId, executionId: EXECUTION_ID, leaseMs: T0 + 40_000, timeoutMs: T0 + 60_000 },
    ]);
    // A heartbeat alone leaves the timeout already noted (null: unchanged).
    expect(plan([extended]).taskUpserts).toEqual([{ taskId, executionId: EXECUTION_ID, leaseMs: T0 + 40_000, timeoutMs: null }]);
    const ended: ExecutionEvent = { type: 'TaskSucceeded', data: { taskId, output: null, at: new Date(T0 + 20_000).toISOString() } };
    expect(plan([claimed, ended])).toMatchObject({ taskUpserts: [], taskRemovals: [taskId] });
  });
});
