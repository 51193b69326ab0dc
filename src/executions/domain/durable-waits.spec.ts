import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { systemActor, workerActor } from '../../core/actors.js';
import type { CompleteAttempt, FireTimer, RecordNodeResult, SendSignal } from './execution.commands.js';
import type { ExecutionEvent, WorkflowSnapshot } from './execution.events.js';
import { executionDecider } from './execution.decider.js';
import { failedInTry } from './tasks.js';
import { timerIdOf } from './durable-waits.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  EXECUTION_ID,
  OPERATOR,
  WORKER_A,
  aWorkflow,
  attemptClaimed,
  attemptScheduled,
  executionStarted,
  given,
  iso,
  requestCancel,
  time,
} from '../../../test/support/executions/execution-fixtures.js';

/** pause (a delay of one hour) → go, and beside it: approve (waits for a signal "approved", 10 s at most) → after. */
function withWaits(o: { retry?: Record<string, unknown>; timeoutMs?: number | null; until?: string } = {}): WorkflowSnapshot {
  const base = aWorkflow();
  const timeoutMs = o.timeoutMs === undefined ? 10_000 : o.timeoutMs;
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [
        { id: 'pause', type: 'delay', config: o.until !== undefined ? { until: o.until } : { ms: 3_600_000 } },
        { id: 'go', type: 'noop' },
        {
          id: 'approve',
          type: 'wait_signal',
          config: { name: 'approved', ...(timeoutMs === null ? {} : { timeoutMs }) },
          ...(o.retry ? { retry: o.retry } : {}),
        },
        { id: 'after', type: 'noop' },
      ],
      edges: [
        { from: 'pause', to: 'go' },
        { from: 'approve', to: 'after' },
      ],
    },
  };
}

const TIMER = timerIdOf(EXECUTION_ID, 'pause', 1);
const SIGNAL_TIMER = timerIdOf(EXECUTION_ID, 'approve', 1);
const SIGNAL_1 = '0b8f4e0a-1c2d-4e5f-8a9b-00000005a001';
const SIGNAL_2 = '0b8f4e0a-1c2d-4e5f-8a9b-00000005a002';
const HOUR = 3_600_000;

const running = (workflow = withWaits()): ExecutionEvent[] => [
  executionStarted({ workflow }),
  attemptScheduled({ at: 0 }),
  attemptClaimed({ at: 1_000 }),
];

function nodeWaiting(nodeId: 'pause' | 'approve', o: { at: number; attemptId?: string; fencingToken?: number }): RecordNodeResult {
  return {
    type: 'RecordNodeResult',
    data: {
      attemptId: o.attemptId ?? ATTEMPT_1,
      workerId: WORKER_A,
      fencingToken: o.fencingToken ?? 1,
      kind: 'node_waiting',
      nodeId,
      wait: { kind: nodeId === 'pause' ? 'timer' : 'signal' },
    },
    metadata: { now: time(o.at), actor: workerActor(WORKER_A) },
  };
}

function suspend(o: { at: number; timers?: string[]; signals?: string[] }): CompleteAttempt {
  return {
    type: 'CompleteAttempt',
    data: {
      attemptId: ATTEMPT_1,
      workerId: WORKER_A,
      fencingToken: 1,
      outcome: 'suspended',
      ...(o.timers ? { timers: o.timers } : {}),
      ...(o.signals ? { signals: o.signals } : {}),
      nextAttemptId: ATTEMPT_2,
      jitter: 0,
    },
    metadata: { now: time(o.at), actor: workerActor(WORKER_A) },
  };
}

const fireTimer = (o: { at: number; timerId?: string }): FireTimer => ({
  type: 'FireTimer',
  data: { timerId: o.timerId ?? TIMER, nextAttemptId: ATTEMPT_2, jitter: 0 },
  metadata: { now: time(o.at), actor: systemActor('timer') },
});

const sendSignal = (o: { at: number; signalId?: string; name?: string; payload?: unknown; key?: string }): SendSignal => ({
  type: 'SendSignal',
  data: {
    signalId: o.signalId ?? SIGNAL_1,
    name: o.name ?? 'approved',
    payload: o.payload ?? { by: 'ana' },
    idempotency:
      o.key === undefined ? null : { key: o.key, fingerprint: JSON.stringify([o.name ?? 'approved', o.payload ?? { by: 'ana' }]) },
    nextAttemptId: ATTEMPT_2,
  },
  metadata: { now: time(o.at), actor: OPERATOR },
});

const timerScheduled = (o: { at: number; dueAt: number; timerId?: string; nodeId?: string; purpose?: 'delay' | 'signal_timeout' }) =>
  ({
    type: 'TimerScheduled',
    data: {
      timerId: o.timerId ?? TIMER,
      nodeId: o.nodeId ?? 'pause',
      attemptId: ATTEMPT_1,
      purpose: o.purpose ?? 'delay',
      dueAt: iso(o.dueAt),
      scheduledAt: iso(o.at),
    },
  }) satisfies ExecutionEvent;

const timerFired = (o: { at: number; dueAt: number; timerId?: string; nodeId?: string }): ExecutionEvent => ({
  type: 'TimerFired',
  data: { timerId: o.timerId ?? TIMER, nodeId: o.nodeId ?? 'pause', dueAt: iso(o.dueAt), firedAt: iso(o.at), lateByMs: o.at - o.dueAt },
});

const signalAwaited = (o: { at: number; timerId?: string | null; tries?: number }): ExecutionEvent => ({
  type: 'SignalAwaited',
  data: {
    nodeId: 'approve',
    attemptId: ATTEMPT_1,
    name: 'approved',
    tries: o.tries ?? 1,
    timerId: o.timerId === undefined ? SIGNAL_TIMER : o.timerId,
    at: iso(o.at),
  },
});

const signalReceived = (o: { at: number; signalId?: string; payload?: unknown }): ExecutionEvent => ({
  type: 'SignalReceived',
  data: {
    signalId: o.signalId ?? SIGNAL_1,
    name: 'approved',
    payload: o.payload ?? { by: 'ana' },
    idempotency: null,
    sentBy: OPERATOR,
    at: iso(o.at),
  },
});

const suspended = (at: number, waits: { nodeId: string; kind: 'timer' | 'signal' }[]): ExecutionEvent => ({
  type: 'AttemptSuspended',
  data: { attemptId: ATTEMPT_1, waits, at: iso(at) },
});

const resumeScheduled = (at: number, attemptId = ATTEMPT_2, attemptNumber = 2): ExecutionEvent =>
  attemptScheduled({ attemptId, attemptNumber, reason: 'resume', at });

/** The attempt reached the delay and suspended on it: no attempt, no worker, one timer. */
const sleeping = (): ExecutionEvent[] => [
  ...running(),
  timerScheduled({ at: 2_000, dueAt: 2_000 + HOUR }),
  suspended(3_000, [{ nodeId: 'pause', kind: 'timer' }]),
];

/** The attempt reached the wait_signal node (no signal yet) and suspended on it. */
const awaitingSignal = (workflow = withWaits()): ExecutionEvent[] => [
  ...running(workflow),
  signalAwaited({ at: 2_000 }),
  timerScheduled({ at: 2_000, dueAt: 12_000, timerId: SIGNAL_TIMER, nodeId: 'approve', purpose: 'signal_timeout' }),
  suspended(3_000, [{ nodeId: 'approve', kind: 'signal' }]),
];

describe('durable timers', () => {
  it('records the due time once, from the graph and the clock of the command', () => {
    given(running())
      .when(nodeWaiting('pause', { at: 2_000 }))
      .then([timerScheduled({ at: 2_000, dueAt: 2_000 + HOUR })]);
  });

  it('takes an absolute due time from `until`', () => {
    const until = iso(5 * HOUR);
    given(running(withWaits({ until })))
      .when(nodeWaiting('pause', { at: 2_000 }))
      .then([timerScheduled({ at: 2_000, dueAt: 5 * HOUR })]);
  });

  it('never starts the wait again: a resumed or redelivered request while the timer lives records nothing', () => {
    given(sleeping())
      .when(nodeWaiting('pause', { at: 9_000 }))
      .thenNothingHappens();
    const resumed = [...sleeping(), resumeScheduled(10_000), attemptClaimed({ attemptId: ATTEMPT_2, fencingToken: 2, at: 11_000 })];
    given(resumed)
      .when(nodeWaiting('pause', { at: 12_000, attemptId: ATTEMPT_2, fencingToken: 2 }))
      .thenNothingHappens();
  });

  it('suspends the attempt on its timer: the execution waits, the node is waiting', () => {
    const state = fold(executionDecider, sleeping());
    expect(state.status).toBe('waiting');
    if (state.status === 'not_started') throw new Error('unreachable');
    expect(state.nodes['pause']?.status).toBe('waiting');
    expect(state.timers[TIMER]).toMatchObject({ status: 'scheduled', dueAt: iso(2_000 + HOUR) });
    given([...running(), timerScheduled({ at: 2_000, dueAt: 2_000 + HOUR })])
      .when(suspend({ at: 3_000, timers: ['pause'] }))
      .then([suspended(3_000, [{ nodeId: 'pause', kind: 'timer' }])]);
  });

  it('fires when due: the node succeeds and a resume attempt takes the graph on', () => {
    const due = 2_000 + HOUR;
    given(sleeping())
      .when(fireTimer({ at: due }))
      .then([
        timerFired({ at: due, dueAt: due }),
        { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'pause', output: null, at: iso(due) } },
        resumeScheduled(due),
      ]);
  });

  it('fires once: a second firing (a racing timer process) records nothing', () => {
    const due = 2_000 + HOUR;
    const fired = [...sleeping(), timerFired({ at: due, dueAt: due })];
    given(fired)
      .when(fireTimer({ at: due + 5 }))
      .thenNothingHappens();
  });

  it('refuses to fire before the due time, naming it', () => {
    given(sleeping())
      .when(fireTimer({ at: 60_000 }))
      .thenThrows('invalid_state', (error) => expect(error.details).toMatchObject({ deadline: iso(2_000 + HOUR) }));
  });

  it('fires a timer due long ago at once, and records how late it was', () => {
    const due = 2_000 + HOUR;
    const late = due + 6 * HOUR;
    given(sleeping())
      .when(fireTimer({ at: late }))
      .then([
        timerFired({ at: late, dueAt: due }),
        { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'pause', output: null, at: iso(late) } },
        resumeScheduled(late),
      ]);
  });

  it('a cancel during the delay ends the execution at once and cancels the timer; it never fires', () => {
    given(sleeping())
      .when(requestCancel({ at: 5_000 }))
      .then([
        { type: 'CancelRequested', data: { reason: 'no longer needed', requestedBy: OPERATOR, at: iso(5_000) } },
        { type: 'TimerCancelled', data: { timerId: TIMER, at: iso(5_000) } },
        { type: 'ExecutionCancelled', data: { reason: 'no longer needed', at: iso(5_000) } },
      ]);
    const cancelled = [
      ...sleeping(),
      { type: 'CancelRequested', data: { reason: null, requestedBy: OPERATOR, at: iso(5_000) } },
      { type: 'TimerCancelled', data: { timerId: TIMER, at: iso(5_000) } },
      { type: 'ExecutionCancelled', data: { reason: null, at: iso(5_000) } },
    ] satisfies ExecutionEvent[];
    given(cancelled)
      .when(fireTimer({ at: 2_000 + HOUR }))
      .thenThrows('stale_attempt');
  });
});

describe('signals', () => {
  it('a signal that arrives before the node is reached is kept, and delivered when it is', () => {
    given(running())
      .when(sendSignal({ at: 1_500 }))
      .then([signalReceived({ at: 1_500 })]);
    given([...running(), signalReceived({ at: 1_500 })])
      .when(nodeWaiting('approve', { at: 2_000 }))
      .then([
        signalAwaited({ at: 2_000, timerId: null }),
        { type: 'SignalDelivered', data: { signalId: SIGNAL_1, nodeId: 'approve', at: iso(2_000) } },
        { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'approve', output: { by: 'ana' }, at: iso(2_000) } },
      ]);
  });

  it('waits, bounded by a timer of its timeoutMs, when no signal was kept', () => {
    given(running())
      .when(nodeWaiting('approve', { at: 2_000 }))
      .then([
        signalAwaited({ at: 2_000 }),
        timerScheduled({ at: 2_000, dueAt: 12_000, timerId: SIGNAL_TIMER, nodeId: 'approve', purpose: 'signal_timeout' }),
      ]);
  });

  it('a signal for a waiting node is delivered at once: its timer is cancelled and the execution resumes', () => {
    given(awaitingSignal())
      .when(sendSignal({ at: 5_000, payload: { ok: true } }))
      .then([
        signalReceived({ at: 5_000, payload: { ok: true } }),
        { type: 'SignalDelivered', data: { signalId: SIGNAL_1, nodeId: 'approve', at: iso(5_000) } },
        { type: 'TimerCancelled', data: { timerId: SIGNAL_TIMER, at: iso(5_000) } },
        { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'approve', output: { ok: true }, at: iso(5_000) } },
        resumeScheduled(5_000),
      ]);
  });

  it('each signal is taken by one wait at most: a second one is kept for the next wait', () => {
    const delivered = [
      ...awaitingSignal(),
      signalReceived({ at: 5_000 }),
      { type: 'SignalDelivered', data: { signalId: SIGNAL_1, nodeId: 'approve', at: iso(5_000) } },
    ] satisfies ExecutionEvent[];
    given(delivered)
      .when(sendSignal({ at: 6_000, signalId: SIGNAL_2 }))
      .then([signalReceived({ at: 6_000, signalId: SIGNAL_2 })]);
    const state = fold(executionDecider, [...delivered, signalReceived({ at: 6_000, signalId: SIGNAL_2 })]);
    if (state.status === 'not_started') throw new Error('unreachable');
    expect(state.signals.map((s) => s.deliveredTo)).toEqual(['approve', null]);
  });

  it('the same Idempotency-Key and signal is a replay; with another payload it is a conflict', () => {
    const keyed = sendSignal({ at: 5_000, key: 'k-1' });
    const history: ExecutionEvent[] = [
      ...running(),
      { type: 'SignalReceived', data: { ...signalReceived({ at: 4_000 }).data, idempotency: keyed.data.idempotency } } as ExecutionEvent,
    ];
    given(history).when(keyed).thenNothingHappens();
    given(history)
      .when(sendSignal({ at: 5_000, key: 'k-1', payload: { other: 1 } }))
      .thenThrows('idempotency_conflict');
  });

  it('refuses a signal once the execution ended', () => {
    const ended: ExecutionEvent[] = [...running(), { type: 'ExecutionCancelled', data: { reason: null, at: iso(3_000) } }];
    given(ended)
      .when(sendSignal({ at: 5_000 }))
      .thenThrows('invalid_state');
  });

  it('the timeout fails the node signal_timeout, and the try fails with it', () => {
    const events = [
      timerFired({ at: 12_000, dueAt: 12_000, timerId: SIGNAL_TIMER, nodeId: 'approve' }),
      {
        type: 'NodeFailed',
        data: {
          attemptId: ATTEMPT_1,
          nodeId: 'approve',
          error: { code: 'signal_timeout', message: 'no signal "approved" arrived within 10000 ms', retryable: true },
          at: iso(12_000),
        },
      },
      resumeScheduled(12_000),
    ] satisfies ExecutionEvent[];
    given(awaitingSignal())
      .when(fireTimer({ at: 12_000, timerId: SIGNAL_TIMER }))
      .then(events);
    const state = fold(executionDecider, [...awaitingSignal(), ...events]);
    if (state.status === 'not_started') throw new Error('unreachable');
    expect(failedInTry(state)).toEqual({ approve: expect.objectContaining({ code: 'signal_timeout' }) });
  });

  it('the node’s retry policy waits again after its backoff, with a new timer', () => {
    const retry = { maxAttempts: 2, initialIntervalMs: 1_000, backoffCoefficient: 2, maxIntervalMs: 60_000, nonRetryable: [] };
    const workflow = withWaits({ retry });
    const next = timerIdOf(EXECUTION_ID, 'approve', 2);
    given(awaitingSignal(workflow))
      .when(fireTimer({ at: 12_000, timerId: SIGNAL_TIMER }))
      .then([
        timerFired({ at: 12_000, dueAt: 12_000, timerId: SIGNAL_TIMER, nodeId: 'approve' }),
        signalAwaited({ at: 12_000, timerId: next, tries: 2 }),
        // Backoff with jitter 0 is half the interval (500 ms), then the timeout again.
        timerScheduled({ at: 12_000, dueAt: 12_000 + 500 + 10_000, timerId: next, nodeId: 'approve', purpose: 'signal_timeout' }),
      ]);
  });

  it('a signal that won the race leaves the timeout nothing to fire', () => {
    const delivered = [
      ...awaitingSignal(),
      signalReceived({ at: 5_000 }),
      { type: 'SignalDelivered', data: { signalId: SIGNAL_1, nodeId: 'approve', at: iso(5_000) } },
      { type: 'TimerCancelled', data: { timerId: SIGNAL_TIMER, at: iso(5_000) } },
    ] satisfies ExecutionEvent[];
    given(delivered)
      .when(fireTimer({ at: 12_000, timerId: SIGNAL_TIMER }))
      .thenThrows('stale_attempt');
  });

  it('a cancel ends the wait: the node is cancelled with its timer', () => {
    given(awaitingSignal())
      .when(requestCancel({ at: 5_000 }))
      .then([
        { type: 'CancelRequested', data: { reason: 'no longer needed', requestedBy: OPERATOR, at: iso(5_000) } },
        { type: 'SignalWaitCancelled', data: { nodeId: 'approve', at: iso(5_000) } },
        { type: 'TimerCancelled', data: { timerId: SIGNAL_TIMER, at: iso(5_000) } },
        { type: 'ExecutionCancelled', data: { reason: 'no longer needed', at: iso(5_000) } },
      ]);
  });

  it('a signal delivered while the attempt still ran resumes it as soon as it suspends', () => {
    const ran = [
      ...running(),
      signalAwaited({ at: 2_000 }),
      timerScheduled({ at: 2_000, dueAt: 12_000, timerId: SIGNAL_TIMER, nodeId: 'approve', purpose: 'signal_timeout' }),
      signalReceived({ at: 2_500 }),
      { type: 'SignalDelivered', data: { signalId: SIGNAL_1, nodeId: 'approve', at: iso(2_500) } },
      { type: 'TimerCancelled', data: { timerId: SIGNAL_TIMER, at: iso(2_500) } },
      { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'approve', output: { by: 'ana' }, at: iso(2_500) } },
    ] satisfies ExecutionEvent[];
    given(ran)
      .when(suspend({ at: 3_000, signals: ['approve'] }))
      .then([suspended(3_000, [{ nodeId: 'approve', kind: 'signal' }]), resumeScheduled(3_000, ATTEMPT_2, 2)]);
  });

  it('refuses a suspension naming a wait_signal node that does not wait', () => {
    given(running())
      .when(suspend({ at: 3_000, signals: ['approve'] }))
      .thenThrows('invalid_state');
  });
});
