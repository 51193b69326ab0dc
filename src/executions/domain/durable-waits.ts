import { IdempotencyConflictError, InvalidStateError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import type { CompleteAttempt, FireTimer, RecordNodeResult, SendSignal } from './execution.commands.js';
import type { ExecutionError, ExecutionEvent, RetryPolicy, Wait } from './execution.events.js';
import { type SignalWaitRecord, type StartedExecution, type TimerRecord, currentAttempt, isFinal } from './execution.state.js';
import { backoffMs, shouldRetry } from './retry-policy.js';
import { type ExecutionLimits, requireRoomForKeptSignal } from './execution-limits.js';
import { goesOn, resumeIfSuspended, settledInTry } from './tasks.js';

/**
 * Durable timers and signals: waiting steps that are facts on the execution stream, as tasks are
 * (docs/architecture.md, "Waiting steps"). A `delay` node's timer is scheduled once, with its due
 * time computed here from the graph snapshot and the command's clock; a resumed or retried
 * attempt reaching the node again finds the timer and schedules nothing. The `timer` role fires
 * a due timer by command (`FireTimer`): one firing wins the stream's expected revision, and the
 * decider refuses the others. A `wait_signal` node takes the oldest kept signal of its name, or
 * waits for the next one, bounded by a timer of its `timeoutMs`.
 */

const iso = (d: Date) => d.toISOString();
const plus = (d: Date, ms: number) => new Date(d.getTime() + ms).toISOString();

/** Error code of a `wait_signal` node whose `timeoutMs` passed without a signal. */
export const SIGNAL_TIMEOUT = 'signal_timeout';

/** `<executionId>.<nodeId>.t<seq>`: node ids have no `.`, so it splits back. */
export function timerIdOf(executionId: string, nodeId: string, seq: number): string {
  return `${executionId}.${nodeId}.t${seq}`;
}

function nodeOf(s: StartedExecution, nodeId: string, type: 'delay' | 'wait_signal'): Record<string, unknown> {
  const node = s.workflow.graph.nodes.find((n) => n.id === nodeId);
  if (node?.type !== type) throw new InvalidStateError(`node ${nodeId} is not a ${type} node`);
  return node;
}

function configOf<T>(node: Record<string, unknown>): Partial<T> {
  return node['config'] ?? {};
}

const timersOf = (s: StartedExecution): Record<string, TimerRecord> => s.timers ?? {};
const waitsOf = (s: StartedExecution): Record<string, SignalWaitRecord> => s.signalWaits ?? {};

function liveTimerOf(s: StartedExecution, nodeId: string, purpose: TimerRecord['purpose']): TimerRecord | undefined {
  return Object.values(timersOf(s)).find((t) => t.nodeId === nodeId && t.purpose === purpose && t.status === 'scheduled');
}

function nextTimerId(s: StartedExecution, nodeId: string): string {
  return timerIdOf(s.executionId, nodeId, Object.values(timersOf(s)).filter((t) => t.nodeId === nodeId).length + 1);
}

/** The attempt whose try a wait's end belongs to: the current one (suspended, queued or running). */
function tryAttemptId(s: StartedExecution, fallback: string): string {
  return currentAttempt(s)?.attemptId ?? fallback;
}

/**
 * A `delay` or `wait_signal` node became runnable in a claimed attempt: record its wait, once.
 * Asking again while the wait is live, or after it ended in this try, is no new fact.
 */
export function startDurableWait(
  s: StartedExecution,
  command: RecordNodeResult,
  requireLiveClaim: (s: StartedExecution) => void,
): ExecutionEvent[] {
  const { data, metadata } = command;
  const nodeId = data.nodeId;
  const isTimer = data.wait?.kind === 'timer';
  const node = nodeOf(s, nodeId, isTimer ? 'delay' : 'wait_signal');
  const live = isTimer ? liveTimerOf(s, nodeId, 'delay') !== undefined : waitsOf(s)[nodeId]?.status === 'waiting';
  if (live || settledInTry(s, nodeId)) return [];
  requireLiveClaim(s);
  // The attempt learns of a cancel from its next heartbeat; nothing starts waiting meanwhile.
  if (s.cancelRequest) return [];
  const now = metadata.now;
  const at = iso(now);
  if (isTimer) {
    const config = configOf<{ ms: number; until: string }>(node);
    const dueAt = config.until !== undefined ? iso(new Date(config.until)) : plus(now, config.ms ?? 0);
    return [
      {
        type: 'TimerScheduled',
        data: { timerId: nextTimerId(s, nodeId), nodeId, attemptId: data.attemptId, purpose: 'delay', dueAt, scheduledAt: at },
      },
    ];
  }
  return awaitSignal(s, node, { nodeId, attemptId: data.attemptId, tries: 1 }, now, 0);
}

/** The node waits for a signal of its name: the oldest kept one is delivered at once, else a timer bounds the wait. */
function awaitSignal(
  s: StartedExecution,
  node: Record<string, unknown>,
  wait: { nodeId: string; attemptId: string; tries: number },
  now: Date,
  delayMs: number,
): ExecutionEvent[] {
  const config = configOf<{ name: string; timeoutMs: number }>(node);
  const name = config.name ?? '';
  const at = iso(now);
  const kept = (s.signals ?? []).find((signal) => signal.name === name && signal.deliveredTo === null);
  const timerId = kept === undefined && config.timeoutMs !== undefined ? nextTimerId(s, wait.nodeId) : null;
  const awaited: ExecutionEvent = { type: 'SignalAwaited', data: { ...wait, name, timerId, at } };
  if (kept !== undefined) {
    return [
      awaited,
      { type: 'SignalDelivered', data: { signalId: kept.signalId, nodeId: wait.nodeId, at } },
      { type: 'NodeSucceeded', data: { attemptId: wait.attemptId, nodeId: wait.nodeId, output: kept.payload, at } },
    ];
  }
  if (timerId === null) return [awaited];
  const dueAt = plus(now, delayMs + config.timeoutMs!);
  return [
    awaited,
    {
      type: 'TimerScheduled',
      data: { timerId, nodeId: wait.nodeId, attemptId: wait.attemptId, purpose: 'signal_timeout', dueAt, scheduledAt: at },
    },
  ];
}

/**
 * A due timer fires, once: a `delay` node succeeds; a `wait_signal` node's wait times out, and
 * waits again by the node's retry policy (after its backoff) or fails `signal_timeout`. Either
 * end resumes the suspended execution when the graph can go on. A timer already fired is a
 * replay (no new fact); one cancelled, or of an ended execution, is stale.
 */
export function fireTimer(s: StartedExecution, command: FireTimer): ExecutionEvent[] {
  const { data, metadata } = command;
  const now = metadata.now;
  const timer = timersOf(s)[data.timerId];
  if (timer === undefined) throw new NotFoundError('timer not found');
  if (timer.status === 'fired') return [];
  if (timer.status === 'cancelled' || isFinal(s))
    throw new StaleAttemptError(`timer is ${timer.status}`, { timerId: timer.timerId }).asFinal();
  if (now.getTime() < Date.parse(timer.dueAt))
    throw new InvalidStateError('timer is not due yet', { timerId: timer.timerId, deadline: timer.dueAt });
  const at = iso(now);
  const fired: ExecutionEvent = {
    type: 'TimerFired',
    data: {
      timerId: timer.timerId,
      nodeId: timer.nodeId,
      dueAt: timer.dueAt,
      firedAt: at,
      lateByMs: Math.max(0, now.getTime() - Date.parse(timer.dueAt)),
    },
  };
  const attemptId = tryAttemptId(s, timer.attemptId);
  if (timer.purpose === 'delay') {
    return [
      fired,
      { type: 'NodeSucceeded', data: { attemptId, nodeId: timer.nodeId, output: null, at } },
      ...(goesOn(s, timer.nodeId) ? resumeIfSuspended(s, data.nextAttemptId, now) : []),
    ];
  }
  const wait = waitsOf(s)[timer.nodeId];
  if (wait?.timerId !== timer.timerId || wait.status !== 'waiting')
    throw new StaleAttemptError('the wait this timer bounds is over', { timerId: timer.timerId }).asFinal();
  const node = nodeOf(s, timer.nodeId, 'wait_signal');
  const timeoutMs = configOf<{ timeoutMs: number }>(node).timeoutMs;
  const error: ExecutionError = {
    code: SIGNAL_TIMEOUT,
    message: `no signal "${wait.name}" arrived within ${timeoutMs} ms`,
    retryable: true,
  };
  const retry = node['retry'] as RetryPolicy | undefined;
  if (retry !== undefined && !s.cancelRequest && shouldRetry(retry, wait.tries, error)) {
    const backoff = backoffMs(retry, wait.tries, data.jitter);
    return [fired, ...awaitSignal(s, node, { nodeId: wait.nodeId, attemptId: wait.attemptId, tries: wait.tries + 1 }, now, backoff)];
  }
  return [
    fired,
    { type: 'NodeFailed', data: { attemptId, nodeId: timer.nodeId, error, at } },
    ...resumeIfSuspended(s, data.nextAttemptId, now),
  ];
}

/**
 * An operator's signal: recorded, and taken at once by the node that has waited longest for a
 * signal of its name (its timer cancelled, its output the payload), else kept for the first node
 * that asks. The same Idempotency-Key with the same name and payload is a replay.
 */
export function sendSignal(s: StartedExecution, command: SendSignal, limits: ExecutionLimits): ExecutionEvent[] {
  const { data, metadata } = command;
  const key = data.idempotency?.key;
  const previous = key === undefined ? undefined : (s.signals ?? []).find((signal) => signal.idempotency?.key === key);
  if (previous !== undefined) {
    if (previous.idempotency?.fingerprint === data.idempotency?.fingerprint) return [];
    throw new IdempotencyConflictError('this Idempotency-Key was used with a different signal');
  }
  if (isFinal(s)) throw new InvalidStateError(`execution already ${s.status}`, { status: s.status });
  const now = metadata.now;
  const at = iso(now);
  const received: ExecutionEvent = {
    type: 'SignalReceived',
    data: { signalId: data.signalId, name: data.name, payload: data.payload, idempotency: data.idempotency, sentBy: metadata.actor, at },
  };
  const wait = s.cancelRequest
    ? undefined
    : Object.values(waitsOf(s))
        .filter((w) => w.name === data.name && w.status === 'waiting')
        .sort((a, b) => Date.parse(a.since) - Date.parse(b.since))[0];
  if (wait === undefined) {
    // Promise 13 (docs/architecture.md): what an execution keeps for later is bounded in count and size.
    requireRoomForKeptSignal(s, data.payload, limits);
    return [received];
  }
  const timer = wait.timerId === null ? undefined : timersOf(s)[wait.timerId];
  return [
    received,
    { type: 'SignalDelivered', data: { signalId: data.signalId, nodeId: wait.nodeId, at } },
    ...(timer?.status === 'scheduled' ? [{ type: 'TimerCancelled' as const, data: { timerId: timer.timerId, at } }] : []),
    { type: 'NodeSucceeded', data: { attemptId: tryAttemptId(s, wait.attemptId), nodeId: wait.nodeId, output: data.payload, at } },
    ...(goesOn(s, wait.nodeId) ? resumeIfSuspended(s, data.nextAttemptId, now) : []),
  ];
}

/**
 * What a suspending attempt's `delay` and `wait_signal` nodes wait for, checked against the
 * stream: each has a live wait, or one that ended in this try (then the attempt resumes at once).
 */
export function durableWaitsOf(s: StartedExecution, data: CompleteAttempt['data']): { waits: Wait[]; settled: boolean } {
  const timerNodes = [...new Set(data.timers ?? [])];
  const signalNodes = [...new Set(data.signals ?? [])];
  const check = (nodeId: string, live: boolean, type: string) => {
    if (!live && !settledInTry(s, nodeId) && !s.cancelRequest) throw new InvalidStateError(`${type} node ${nodeId} does not wait`);
  };
  for (const nodeId of timerNodes) {
    nodeOf(s, nodeId, 'delay');
    check(nodeId, liveTimerOf(s, nodeId, 'delay') !== undefined, 'delay');
  }
  for (const nodeId of signalNodes) {
    nodeOf(s, nodeId, 'wait_signal');
    check(nodeId, waitsOf(s)[nodeId]?.status === 'waiting', 'wait_signal');
  }
  const waits: Wait[] = [
    ...timerNodes.map((nodeId) => ({ nodeId, kind: 'timer' as const })),
    ...signalNodes.map((nodeId) => ({ nodeId, kind: 'signal' as const })),
  ];
  return { waits, settled: waits.some((w) => settledInTry(s, w.nodeId)) };
}

const ENDINGS = new Set(['ExecutionSucceeded', 'ExecutionFailed', 'ExecutionTimedOut', 'ExecutionCancelled']);

/**
 * A cancel request, or the end of the execution, ends every live timer and signal wait in the
 * same append (right after the request, or just before the end): nothing fires for it later.
 */
export function withDurableWaitsCancelled(s: StartedExecution, events: ExecutionEvent[], now: Date): ExecutionEvent[] {
  const index = events.findIndex((e) => e.type === 'CancelRequested' || ENDINGS.has(e.type));
  if (index === -1) return events;
  const endedHere = new Set(events.flatMap((e) => (e.type === 'TimerFired' || e.type === 'TimerCancelled' ? [e.data.timerId] : [])));
  const at = iso(now);
  const cancelled: ExecutionEvent[] = [
    ...Object.values(waitsOf(s))
      .filter((w) => w.status === 'waiting')
      .map((w): ExecutionEvent => ({ type: 'SignalWaitCancelled', data: { nodeId: w.nodeId, at } })),
    ...Object.values(timersOf(s))
      .filter((t) => t.status === 'scheduled' && !endedHere.has(t.timerId))
      .map((t): ExecutionEvent => ({ type: 'TimerCancelled', data: { timerId: t.timerId, at } })),
  ];
  if (cancelled.length === 0) return events;
  const position = events[index].type === 'CancelRequested' ? index + 1 : index;
  return [...events.slice(0, position), ...cancelled, ...events.slice(position)];
}
