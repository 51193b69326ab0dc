import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { systemActor, workerActor } from '../../core/actors.js';
import type { HeartbeatTask, SendSignal, TimeOutAttempt } from './execution.commands.js';
import type { ExecutionEvent, WorkflowSnapshot } from './execution.events.js';
import { createExecutionDecider } from './execution.decider.js';
import { DEFAULT_EXECUTION_LIMITS, type ExecutionLimits } from './execution-limits.js';
import { taskIdOf } from './tasks.js';
import { deciderSpecification } from '../../../test/support/core/decider-specification.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  OPERATOR,
  aWorkflow,
  attemptClaimed,
  attemptScheduled,
  executionStarted,
  iso,
  requestCancel,
  time,
} from '../../../test/support/executions/execution-fixtures.js';

/** approve (waits for a signal "approved") → after; charge, a task node of queue "billing". */
function workflow(): WorkflowSnapshot {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [
        { id: 'approve', type: 'wait_signal', config: { name: 'approved' } },
        { id: 'after', type: 'noop' },
        { id: 'charge', type: 'task', config: { queue: 'billing', heartbeatTimeoutMs: 10_000 } },
      ],
      edges: [{ from: 'approve', to: 'after' }],
    },
  };
}

const TASK = taskIdOf('0b8f4e0a-1c2d-4e5f-8a9b-000000000001', 'charge', 1);
const POLLER = 'billing-7';
const signalId = (n: number) => `0b8f4e0a-1c2d-4e5f-8a9b-00000005a${String(n).padStart(3, '0')}`;

const running = (): ExecutionEvent[] => [
  executionStarted({ workflow: workflow() }),
  attemptScheduled({ at: 0 }),
  attemptClaimed({ at: 1_000 }),
];

/** Bytes of events' data as JSON, measured apart from the domain's own count. */
const bytesOf = (events: readonly ExecutionEvent[]) =>
  events.reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e.data), 'utf8'), 0);

const sendSignal = (o: { at: number; n: number; name?: string; payload?: unknown }): SendSignal => ({
  type: 'SendSignal',
  data: {
    signalId: signalId(o.n),
    name: o.name ?? 'approved',
    payload: o.payload ?? { n: o.n },
    idempotency: null,
    nextAttemptId: ATTEMPT_2,
  },
  metadata: { now: time(o.at), actor: OPERATOR },
});

const signalReceived = (o: { at: number; n: number; name?: string; payload?: unknown }): ExecutionEvent => ({
  type: 'SignalReceived',
  data: {
    signalId: signalId(o.n),
    name: o.name ?? 'approved',
    payload: o.payload ?? { n: o.n },
    idempotency: null,
    sentBy: OPERATOR,
    at: iso(o.at),
  },
});

const signalAwaited = (at: number): ExecutionEvent => ({
  type: 'SignalAwaited',
  data: { nodeId: 'approve', attemptId: ATTEMPT_1, name: 'approved', tries: 1, timerId: null, at: iso(at) },
});

/** The task was scheduled and a poller claimed it. */
const taskClaimed = (): ExecutionEvent[] => [
  ...running(),
  {
    type: 'TaskScheduled',
    data: {
      taskId: TASK,
      nodeId: 'charge',
      attemptId: ATTEMPT_1,
      queue: 'billing',
      input: {},
      taskAttempt: 1,
      timeoutMs: null,
      heartbeatTimeoutMs: 10_000,
      notBefore: iso(2_000),
      scheduledAt: iso(2_000),
    },
  },
  {
    type: 'TaskClaimed',
    data: { taskId: TASK, workerId: POLLER, fencingToken: 2, leaseExpiresAt: iso(12_000), timeoutAt: null, claimedAt: iso(2_000) },
  },
];

const heartbeat = (at: number, progress?: unknown): HeartbeatTask => ({
  type: 'HeartbeatTask',
  data: { taskId: TASK, workerId: POLLER, fencingToken: 2, ...(progress !== undefined ? { progress } : {}) },
  metadata: { now: time(at), actor: workerActor(POLLER) },
});

const specWith = (limits: Partial<ExecutionLimits>) =>
  deciderSpecification(createExecutionDecider({ ...DEFAULT_EXECUTION_LIMITS, ...limits }));

describe('the bound on an execution’s history', () => {
  it('refuses a command whose events would take the history beyond it, with execution_full', () => {
    const limit = bytesOf(running()) + bytesOf([signalReceived({ at: 1_500, n: 1 })]) - 1;
    specWith({ maxHistoryBytes: limit })
      .given(running())
      .when(sendSignal({ at: 1_500, n: 1 }))
      .thenThrows('execution_full', (error) =>
        expect(error.details).toMatchObject({ limitBytes: limit, historyBytes: bytesOf(running()) }),
      );
  });

  it('accepts the command that fills it exactly', () => {
    const limit = bytesOf(running()) + bytesOf([signalReceived({ at: 1_500, n: 1 })]);
    specWith({ maxHistoryBytes: limit })
      .given(running())
      .when(sendSignal({ at: 1_500, n: 1 }))
      .then([signalReceived({ at: 1_500, n: 1 })]);
  });

  it('counts every event of the history, whoever appended it', () => {
    const history = [...running(), signalReceived({ at: 1_500, n: 1 }), signalReceived({ at: 1_600, n: 2 })];
    specWith({ maxHistoryBytes: bytesOf(history) + 10 })
      .given(history)
      .when(sendSignal({ at: 1_700, n: 3 }))
      .thenThrows('execution_full');
  });

  it('still lets a full execution be cancelled', () => {
    specWith({ maxHistoryBytes: bytesOf(running()) })
      .given(running())
      .when(requestCancel({ at: 2_000, reason: 'too big' }))
      .then([{ type: 'CancelRequested', data: { reason: 'too big', requestedBy: OPERATOR, at: iso(2_000) } }]);
  });

  it('still lets a full execution’s attempt time out', () => {
    const timeOut: TimeOutAttempt = {
      type: 'TimeOutAttempt',
      data: { attemptId: ATTEMPT_1, nextAttemptId: ATTEMPT_2, jitter: 0 },
      metadata: { now: time(60_000), actor: systemActor('watchdog') },
    };
    const decider = createExecutionDecider({ ...DEFAULT_EXECUTION_LIMITS, maxHistoryBytes: bytesOf(running()) });
    const events = decider.decide(timeOut, fold(decider, running()));
    expect(events[0]).toMatchObject({ type: 'AttemptTimedOut', data: { attemptId: ATTEMPT_1 } });
  });
});

describe('the bound on kept signals', () => {
  it('refuses a signal beyond the count of kept signals, with too_many_signals', () => {
    specWith({ maxKeptSignals: 2 })
      .given([...running(), signalReceived({ at: 1_500, n: 1 }), signalReceived({ at: 1_600, n: 2 })])
      .when(sendSignal({ at: 1_700, n: 3 }))
      .thenThrows('too_many_signals', (error) => expect(error.details).toMatchObject({ limit: 2 }));
  });

  it('refuses a signal whose payload would take the kept payloads beyond their size, with signals_too_large', () => {
    const payload = { text: 'x'.repeat(80) };
    specWith({ maxKeptSignalBytes: 150 })
      .given([...running(), signalReceived({ at: 1_500, n: 1, payload })])
      .when(sendSignal({ at: 1_600, n: 2, payload }))
      .thenThrows('signals_too_large', (error) => expect(error.details).toMatchObject({ limitBytes: 150 }));
  });

  it('does not bound a signal a waiting node takes at once: it is not kept', () => {
    const history = [
      ...running(),
      signalReceived({ at: 1_500, n: 1, name: 'other' }),
      signalReceived({ at: 1_600, n: 2, name: 'other' }),
      signalAwaited(2_000),
    ];
    specWith({ maxKeptSignals: 2, maxKeptSignalBytes: 1 })
      .given(history)
      .when(sendSignal({ at: 3_000, n: 3 }))
      .then([
        signalReceived({ at: 3_000, n: 3 }),
        { type: 'SignalDelivered', data: { signalId: signalId(3), nodeId: 'approve', at: iso(3_000) } },
        { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'approve', output: { n: 3 }, at: iso(3_000) } },
      ]);
  });

  it('counts only signals still kept: one a node took frees its room', () => {
    specWith({ maxKeptSignals: 1 })
      .given([
        ...running(),
        signalReceived({ at: 1_500, n: 1 }),
        { type: 'SignalDelivered', data: { signalId: signalId(1), nodeId: 'approve', at: iso(1_600) } },
      ])
      .when(sendSignal({ at: 1_700, n: 2 }))
      .then([signalReceived({ at: 1_700, n: 2 })]);
  });
});

describe('the bounds on a task’s progress', () => {
  it('refuses a progress entry beyond its size, with progress_too_large: the lease is not extended', () => {
    specWith({ maxTaskProgressBytes: 64 })
      .given(taskClaimed())
      .when(heartbeat(3_000, { log: 'y'.repeat(64) }))
      .thenThrows('progress_too_large', (error) => expect(error.details).toMatchObject({ limitBytes: 64 }));
  });

  it('still extends the lease of a heartbeat without progress', () => {
    specWith({ maxTaskProgressBytes: 1 })
      .given(taskClaimed())
      .when(heartbeat(3_000))
      .then([{ type: 'TaskLeaseExtended', data: { taskId: TASK, leaseExpiresAt: iso(13_000), at: iso(3_000) } }]);
  });

  it('keeps the latest entries only, as many as the bound says', () => {
    const decider = createExecutionDecider({ ...DEFAULT_EXECUTION_LIMITS, taskProgressKept: 3 });
    let history = taskClaimed();
    for (let step = 1; step <= 5; step++)
      history = [...history, ...decider.decide(heartbeat(2_000 + step * 1_000, { step }), fold(decider, history))];
    const state = fold(decider, history);
    if (state.status === 'not_started') throw new Error('unreachable');
    expect(state.tasks[TASK].recentProgress).toEqual([
      { at: iso(5_000), progress: { step: 3 } },
      { at: iso(6_000), progress: { step: 4 } },
      { at: iso(7_000), progress: { step: 5 } },
    ]);
  });

  it('keeps the last entry only of heartbeats recorded before the bound', () => {
    const older = (at: number, step: number): ExecutionEvent => ({
      type: 'TaskLeaseExtended',
      data: { taskId: TASK, leaseExpiresAt: iso(at + 10_000), progress: { step }, at: iso(at) },
    });
    const state = fold(createExecutionDecider(DEFAULT_EXECUTION_LIMITS), [...taskClaimed(), older(3_000, 1), older(4_000, 2)]);
    if (state.status === 'not_started') throw new Error('unreachable');
    expect(state.tasks[TASK].recentProgress).toEqual([{ at: iso(4_000), progress: { step: 2 } }]);
  });
});
