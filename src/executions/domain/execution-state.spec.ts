import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { executionDecider } from './execution.decider.js';
import type { ExecutionEvent } from './execution.events.js';
import { evolve, inFoldOrder, type StartedExecution } from './execution.state.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  ATTEMPT_3,
  EXECUTION_ID,
  FAILURE,
  OPERATOR,
  REDRIVE_1,
  THREE_ATTEMPTS,
  WORKER_A,
  WORKER_B,
  WORKSPACE_ID,
  aRunningExecution,
  aWorkflow,
  attemptCancelled,
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  attemptSucceeded,
  attemptTimedOut,
  cancelRequested,
  executionCancelled,
  executionStarted,
  executionSucceeded,
  executionTimedOut,
  iso,
  leaseExtended,
  nodeFailed,
  nodeStarted,
  nodeSucceeded,
  redriveRequested,
} from '../../../test/support/executions/execution-fixtures.js';

const workflow = aWorkflow({ retry: THREE_ATTEMPTS });
const ROWS = { rows: 3 };
const KEY = { key: 'start-key-1', fingerprint: 'fingerprint-of-body-1' };

/** Attempt 1 got `extract` done and failed on `load`; the retry was cancelled while it ran `load`. */
const cancelledDuringRetry: ExecutionEvent[] = [
  executionStarted({ workflow, idempotency: KEY }),
  attemptScheduled(),
  attemptClaimed({ at: 1_000 }),
  leaseExtended({ at: 11_000 }),
  nodeStarted({ nodeId: 'extract', at: 2_000 }),
  nodeSucceeded({ nodeId: 'extract', output: ROWS, at: 3_000 }),
  nodeStarted({ nodeId: 'load', at: 3_000 }),
  nodeFailed({ nodeId: 'load', error: FAILURE, at: 4_000 }),
  attemptFailed({ at: 5_000, error: FAILURE }),
  attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 5_000, notBefore: 6_000 }),
  attemptClaimed({ attemptId: ATTEMPT_2, workerId: WORKER_B, fencingToken: 2, at: 7_000 }),
  nodeStarted({ attemptId: ATTEMPT_2, nodeId: 'load', at: 8_000 }),
  cancelRequested({ at: 9_000, reason: 'wrong input' }),
  attemptCancelled({ attemptId: ATTEMPT_2, at: 10_000 }),
  executionCancelled({ at: 10_000, reason: 'wrong input' }),
];

const attempt1 = {
  attemptId: ATTEMPT_1,
  attemptNumber: 1,
  reason: 'start',
  status: 'failed',
  scheduledAt: iso(0),
  notBefore: iso(0),
  queueDeadline: iso(60_000),
  workerId: WORKER_A,
  fencingToken: 1,
  claimedAt: iso(1_000),
  leaseExpiresAt: iso(41_000),
  endedAt: iso(5_000),
  error: FAILURE,
};
const attempt2 = {
  attemptId: ATTEMPT_2,
  attemptNumber: 2,
  reason: 'retry',
  status: 'cancelled',
  scheduledAt: iso(5_000),
  notBefore: iso(6_000),
  queueDeadline: iso(66_000),
  workerId: WORKER_B,
  fencingToken: 2,
  claimedAt: iso(7_000),
  leaseExpiresAt: iso(37_000),
  endedAt: iso(10_000),
};
const nodes = {
  extract: { nodeId: 'extract', attemptId: ATTEMPT_1, status: 'succeeded', startedAt: iso(2_000), endedAt: iso(3_000), output: ROWS },
  load: { nodeId: 'load', attemptId: ATTEMPT_2, status: 'running', startedAt: iso(8_000), endedAt: null },
};

describe('evolve', () => {
  it('has not started before ExecutionStarted', () => {
    expect(fold(executionDecider, [])).toEqual({ status: 'not_started' });
  });

  it('folds a full history into its status, attempts, nodes and cancel request', () => {
    expect(fold(executionDecider, cancelledDuringRetry)).toEqual({
      status: 'cancelled',
      executionId: EXECUTION_ID,
      workspaceId: WORKSPACE_ID,
      workflow,
      input: { day: '2029-12-31' },
      startIdempotency: KEY,
      scheduledBy: null,
      parent: null,
      children: {},
      startedBy: OPERATOR,
      startedAt: iso(0),
      updatedAt: iso(10_000),
      attempts: [attempt1, attempt2],
      attemptsInRun: 2,
      nodes,
      cancelRequest: { reason: 'wrong input', requestedBy: OPERATOR, at: iso(9_000) },
      redrives: {},
      pendingApproval: null,
      approvalDecisions: {},
      tasks: {},
      timers: {},
      signals: [],
      signalWaits: {},
      waits: [],
      mapItems: {},
      lastFencingToken: 2,
      awaitingSlot: null,
      slotAttemptId: null,
      runStartedAt: iso(0),
      endedAt: iso(10_000),
      historyBytes: cancelledDuringRetry.reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e.data), 'utf8'), 0),
      endReason: 'wrong input',
    });
  });

  it('reopens the execution on a redrive: a new run with its own budget, earlier node results kept', () => {
    const state = fold(executionDecider, [
      ...cancelledDuringRetry,
      redriveRequested({ at: 20_000, attemptNumber: 3, attemptId: ATTEMPT_3 }),
      attemptScheduled({ attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'redrive', at: 20_000 }),
    ]);
    expect(state).toMatchObject({
      status: 'queued',
      attemptsInRun: 1,
      cancelRequest: null,
      endedAt: null,
      endReason: undefined,
      lastFencingToken: 2,
      nodes,
      redrives: { 'redrive-key-1': { redriveId: REDRIVE_1, fingerprint: 'fingerprint-redrive-1', attemptId: ATTEMPT_3, attemptNumber: 3 } },
      attempts: [
        attempt1,
        attempt2,
        { attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'redrive', status: 'queued', workerId: null, fencingToken: null },
      ],
    });
  });

  it('records the output and end of a succeeded execution', () => {
    expect(
      fold(executionDecider, [
        ...aRunningExecution(),
        attemptSucceeded({ at: 5_000, output: ROWS }),
        executionSucceeded({ at: 5_000, output: ROWS }),
      ]),
    ).toMatchObject({
      status: 'succeeded',
      output: ROWS,
      endedAt: iso(5_000),
      attempts: [{ attemptId: ATTEMPT_1, status: 'succeeded', output: ROWS, endedAt: iso(5_000) }],
    });
  });

  it('records a timed-out attempt and execution', () => {
    expect(
      fold(executionDecider, [
        ...aRunningExecution(),
        attemptTimedOut({ at: 31_000, reason: 'lease_expired', deadline: 31_000 }),
        executionTimedOut({ at: 31_000 }),
      ]),
    ).toMatchObject({
      status: 'timed_out',
      endReason: 'attempt timed out and no retry is left',
      endedAt: iso(31_000),
      attempts: [{ attemptId: ATTEMPT_1, status: 'timed_out', endedAt: iso(31_000), leaseExpiresAt: iso(31_000) }],
    });
  });
});

describe('inFoldOrder', () => {
  /** What a jsonb column gives back: the same object with its keys sorted by length, then bytes. */
  const inJsonbOrder = <T extends object>(value: T): T =>
    Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.length - b.length || (a < b ? -1 : 1))) as T;

  it('gives a state read back from jsonb the key order evolve builds, with the same fields', () => {
    // Given a running execution's state, as evolve built it and as a read model gives it back
    const built = fold(executionDecider, aRunningExecution({ workflow })) as StartedExecution;
    const readBack = inJsonbOrder(built);
    expect(Object.keys(readBack)).not.toEqual(Object.keys(built));
    // When it is put in fold order
    const ordered = inFoldOrder(readBack);
    // Then it has evolve's key order and the same content, and folds on as the original does
    expect(Object.keys(ordered)).toEqual(Object.keys(built));
    expect(ordered).toEqual(built);
    const next = executionSucceeded({ at: 9_000, output: { rows: 1 } });
    expect(evolve(ordered, next)).toEqual(evolve(built, next));
  });

  it('keeps what an end added to the state (its output)', () => {
    // Given a succeeded execution's state read back from jsonb
    const ended = evolve(
      fold(executionDecider, aRunningExecution({ workflow })),
      executionSucceeded({ at: 9_000, output: { rows: 1 } }),
    ) as StartedExecution;
    // When it is put in fold order, then nothing of it is lost
    const ordered = inFoldOrder(inJsonbOrder(ended));
    expect(ordered).toEqual(ended);
    expect(Object.keys(ordered)).toEqual(Object.keys(ended));
  });

  it('keeps the key order of a fresh start, so no field of the state is left out', () => {
    const started = fold(executionDecider, [executionStarted({ workflow })]) as StartedExecution;
    expect(Object.keys(inFoldOrder(inJsonbOrder(started)))).toEqual(Object.keys(started));
  });
});
