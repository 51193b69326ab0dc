import { IdempotencyConflictError, InvalidStateError, LeaseExpiredError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import type { Decider } from '../../core/decider.js';
import type {
  ClaimAttempt,
  CompleteAttempt,
  ExecutionCommand,
  Fence,
  Heartbeat,
  RecordNodeResult,
  RequestCancel,
  RequestRedrive,
  StartExecution,
  TimeOutAttempt,
} from './execution.commands.js';
import type { ExecutionError, ExecutionEvent } from './execution.events.js';
import {
  type ExecutionState,
  type RunningAttempt,
  type StartedExecution,
  currentAttempt,
  evolve,
  evolveCountingHistory,
  initialState,
  isFinal,
  nextAttemptNumber,
} from './execution.state.js';
import { backoffMs, shouldRetry } from './retry-policy.js';
import { awaitApproval, decideApproval } from './decide-approval.js';
import {
  claimTask,
  completeTask,
  heartbeatTask,
  rootTasks,
  scheduleTask,
  suspendAttempt,
  timeOutTask,
  withTasksCancelled,
} from './tasks.js';
import { timeOutExecution } from './time-out-execution.js';
import { durableWaitsOf, fireTimer, sendSignal, startDurableWait, withDurableWaitsCancelled } from './durable-waits.js';
import { admitExecution } from './admit-execution.js';
import { recordMapItems } from './map-items.js';
import { recordChildResult, startChild } from './subworkflows.js';
import { withSlotYielded } from './yield-slot.js';
import { DEFAULT_EXECUTION_LIMITS, type ExecutionLimits, requireRoomInHistory } from './execution-limits.js';

const iso = (d: Date) => d.toISOString();
const plus = (d: Date, ms: number) => new Date(d.getTime() + ms).toISOString();

function started(state: ExecutionState): StartedExecution {
  if (state.status === 'not_started') throw new NotFoundError('execution not found');
  return state;
}

function startExecution(command: StartExecution, state: ExecutionState): ExecutionEvent[] {
  const { data, metadata } = command;
  if (state.status !== 'not_started') {
    // Promise 2 (docs/architecture.md): the same key and body is a replay (no new fact); another body is a conflict.
    // A schedule fire names its execution: the same fire again is a replay, whoever starts it.
    const fire = data.scheduledBy;
    if (fire && state.scheduledBy?.schedule === fire.schedule && state.scheduledBy.fireTime === fire.fireTime) return [];
    // A child names its execution after its parent's node: the same child started again is a replay.
    const parent = data.parent;
    if (parent && state.parent?.executionId === parent.executionId && state.parent.nodeId === parent.nodeId) return [];
    const previous = state.startIdempotency;
    if (data.idempotency && previous?.key === data.idempotency.key) {
      if (previous.fingerprint === data.idempotency.fingerprint) return [];
      throw new IdempotencyConflictError('this Idempotency-Key was used with a different request');
    }
    throw new InvalidStateError('execution already exists');
  }
  const queueMs = data.workflow.graph.timeouts.queueMs;
  const at = iso(metadata.now);
  const started: ExecutionEvent = {
    type: 'ExecutionStarted',
    data: {
      executionId: data.executionId,
      workspaceId: data.workspaceId,
      workflow: data.workflow,
      input: data.input,
      idempotency: data.idempotency,
      ...(data.scheduledBy ? { scheduledBy: data.scheduledBy } : {}),
      ...(data.parent ? { parent: data.parent } : {}),
      startedBy: metadata.actor,
      startedAt: at,
    },
  };
  // The first runnable nodes are all plain task nodes: their tasks go out now, and no attempt is needed to reach them.
  const tasks = data.waitFor ? null : rootTasks(evolve(state, started) as StartedExecution, data.attemptId, metadata.now);
  if (tasks !== null) return [started, ...tasks];
  // A workspace with a concurrency bound: the first attempt waits for a slot (the admission schedules it).
  const firstAttempt: ExecutionEvent = data.waitFor
    ? {
        type: 'ExecutionAwaitingSlot',
        data: { attemptId: data.attemptId, attemptNumber: 1, reason: 'start', waitingFor: data.waitFor, at },
      }
    : {
        type: 'AttemptScheduled',
        data: {
          attemptId: data.attemptId,
          attemptNumber: 1,
          reason: 'start',
          notBefore: at,
          queueDeadline: plus(metadata.now, queueMs),
          scheduledAt: at,
        },
      };
  return [started, firstAttempt];
}

function claimAttempt(command: ClaimAttempt, state: ExecutionState): ExecutionEvent[] {
  const s = started(state);
  const { attemptId, workerId } = command.data;
  const now = command.metadata.now;
  const attempt = currentAttempt(s);
  if (!attempt || attempt.attemptId !== attemptId) throw new StaleAttemptError('attempt is not the current attempt', { attemptId });
  if (attempt.status === 'running') {
    // A claim whose answer was lost is asked again by the same worker: same claim, no new fact.
    if (attempt.workerId === workerId) {
      if (now.getTime() >= Date.parse(attempt.leaseExpiresAt)) throw new LeaseExpiredError('lease expired', { attemptId });
      return [];
    }
    throw new StaleAttemptError('attempt is claimed by another worker', { attemptId });
  }
  if (attempt.status !== 'queued') throw new StaleAttemptError(`attempt is ${attempt.status}`, { attemptId });
  if (now.getTime() < Date.parse(attempt.notBefore))
    throw new StaleAttemptError('attempt is not due yet', { attemptId, notBefore: attempt.notBefore });
  // Promise 4 (docs/architecture.md): nobody may claim after the queue deadline, whether or not the watchdog ran.
  if (now.getTime() >= Date.parse(attempt.queueDeadline)) {
    throw new StaleAttemptError('attempt queue deadline passed', { attemptId, queueDeadline: attempt.queueDeadline });
  }
  return [
    {
      type: 'AttemptClaimed',
      data: {
        attemptId,
        workerId,
        fencingToken: s.lastFencingToken + 1,
        leaseExpiresAt: plus(now, s.workflow.graph.timeouts.leaseMs),
        claimedAt: iso(now),
      },
    },
  ];
}

/**
 * Promise 3 and 4 (docs/architecture.md): only the current claim (attempt + worker + fencing token) may act, and only
 * before its lease expires — checked here, on every command, not left to the watchdog. Exported for queries that
 * answer only the live claim (a worker's secret resolution), with the very same fence.
 */
export function requireLiveClaim(s: StartedExecution, fence: Fence, now: Date): RunningAttempt {
  const attempt = currentAttempt(s);
  if (
    attempt === undefined ||
    attempt.status !== 'running' ||
    attempt.attemptId !== fence.attemptId ||
    attempt.workerId !== fence.workerId ||
    attempt.fencingToken !== fence.fencingToken
  ) {
    // Promise 4 (docs/architecture.md): a claim whose lease ran out is told so, whether or not the watchdog has run yet.
    const own = s.attempts.find((a) => a.attemptId === fence.attemptId);
    // An attempt that ended never runs again: those refusals hold in every later state.
    const ended = own !== undefined && own.status !== 'queued' && own.status !== 'running';
    if (own?.status === 'timed_out' && isSameClaim(s, fence)) {
      throw new LeaseExpiredError('lease expired', { attemptId: fence.attemptId, leaseExpiresAt: own.leaseExpiresAt }).asFinal();
    }
    const stale = new StaleAttemptError('not the current claim of this attempt', { attemptId: fence.attemptId });
    throw ended ? stale.asFinal() : stale;
  }
  if (now.getTime() >= Date.parse(attempt.leaseExpiresAt)) {
    throw new LeaseExpiredError('lease expired', { attemptId: fence.attemptId, leaseExpiresAt: attempt.leaseExpiresAt });
  }
  return attempt;
}

function heartbeat(command: Heartbeat, state: ExecutionState): ExecutionEvent[] {
  const s = started(state);
  const now = command.metadata.now;
  requireLiveClaim(s, command.data, now);
  return [
    {
      type: 'LeaseExtended',
      data: { attemptId: command.data.attemptId, leaseExpiresAt: plus(now, s.workflow.graph.timeouts.leaseMs), extendedAt: iso(now) },
    },
  ];
}

function recordNodeResult(command: RecordNodeResult, state: ExecutionState): ExecutionEvent[] {
  const s = started(state);
  const { data, metadata } = command;
  const at = iso(metadata.now);
  if (data.kind === 'node_waiting') {
    const requireClaim = (current: StartedExecution) => requireLiveClaim(current, data, metadata.now);
    if (data.wait?.kind === 'timer' || data.wait?.kind === 'signal') return startDurableWait(s, command, requireClaim);
    if (data.wait?.kind === 'subworkflow') return startChild(s, command, requireClaim);
    return scheduleTask(s, command, requireClaim);
  }
  const previous = s.nodes[data.nodeId];
  const target = { node_started: 'running', node_succeeded: 'succeeded', node_failed: 'failed', node_skipped: 'skipped' }[data.kind];
  // A redelivered result of the same claim is already recorded: nothing new to say. A start
  // redelivered after the node succeeded must not rewind it (its output is what a resume reuses).
  const recorded =
    previous?.attemptId === data.attemptId &&
    (previous.status === target || (data.kind === 'node_started' && previous.status === 'succeeded'));
  if (recorded && isSameClaim(s, data)) return [];
  requireLiveClaim(s, data, metadata.now);
  if (!s.workflow.graph.nodes.some((n) => n.id === data.nodeId)) throw new InvalidStateError(`unknown node ${data.nodeId}`);
  if (previous?.status === 'succeeded' && previous.attemptId !== data.attemptId) {
    throw new InvalidStateError(`node ${data.nodeId} already succeeded in an earlier attempt`);
  }
  // Within one attempt a node's final result is final: a contradicting one is a worker bug.
  if (previous?.attemptId === data.attemptId && previous.status !== 'running' && previous.status !== target) {
    throw new InvalidStateError(`node ${data.nodeId} already ${previous.status} in this attempt`);
  }
  const base = { attemptId: data.attemptId, nodeId: data.nodeId, at };
  switch (data.kind) {
    case 'node_started':
      return [{ type: 'NodeStarted', data: base }];
    case 'node_succeeded':
      return [{ type: 'NodeSucceeded', data: { ...base, output: data.output ?? null } }];
    case 'node_failed':
      return [{ type: 'NodeFailed', data: { ...base, error: data.error ?? { code: 'node_failed', message: 'node failed' } } }];
    case 'node_skipped':
      return [{ type: 'NodeSkipped', data: { ...base, reason: data.reason ?? 'predecessor did not succeed' } }];
  }
}

function isSameClaim(s: StartedExecution, fence: Fence): boolean {
  const attempt = s.attempts.find((a) => a.attemptId === fence.attemptId);
  return attempt?.workerId === fence.workerId && attempt.fencingToken === fence.fencingToken;
}

const OUTCOME_STATUS = { succeeded: 'succeeded', failed: 'failed', cancelled: 'cancelled', suspended: 'suspended' } as const;

function completeAttempt(command: CompleteAttempt, state: ExecutionState): ExecutionEvent[] {
  const s = started(state);
  const { data, metadata } = command;
  const now = metadata.now;
  const at = iso(now);
  const done = s.attempts.find((a) => a.attemptId === data.attemptId);
  // The same completion delivered twice (lost reply, redelivered message) is a replay.
  if (done && done.status === OUTCOME_STATUS[data.outcome] && isSameClaim(s, data)) return [];
  requireLiveClaim(s, data, now);
  switch (data.outcome) {
    case 'suspended':
      return suspendAttempt(s, command, (approval) => awaitApproval(data.attemptId, approval, at), durableWaitsOf(s, data));
    case 'succeeded':
      return [
        { type: 'AttemptSucceeded', data: { attemptId: data.attemptId, output: data.output ?? null, at } },
        { type: 'ExecutionSucceeded', data: { output: data.output ?? null, at } },
      ];
    case 'cancelled':
      if (!s.cancelRequest) throw new InvalidStateError('cancellation was not requested');
      return [
        { type: 'AttemptCancelled', data: { attemptId: data.attemptId, at } },
        { type: 'ExecutionCancelled', data: { reason: s.cancelRequest.reason, at } },
      ];
    case 'failed': {
      const error: ExecutionError = data.error ?? { code: 'attempt_failed', message: 'attempt failed' };
      return [
        { type: 'AttemptFailed', data: { attemptId: data.attemptId, error, at } },
        ...afterAttemptEnded(s, { kind: 'failed', error }, data.nextAttemptId, data.jitter, now),
      ];
    }
  }
}

/** How an attempt ended badly: it failed with an error, or its lease or queue deadline passed. */
type BadEnding = { kind: 'failed'; error: ExecutionError } | { kind: 'timed_out' };

/** Next step once an attempt ended badly: retry by policy, or end the execution. */
function afterAttemptEnded(s: StartedExecution, ending: BadEnding, nextAttemptId: string, jitter: number, now: Date): ExecutionEvent[] {
  const at = iso(now);
  if (s.cancelRequest) return [{ type: 'ExecutionCancelled', data: { reason: s.cancelRequest.reason, at } }];
  const policy = s.workflow.graph.retry;
  if (shouldRetry(policy, s.attemptsInRun, ending.kind === 'failed' ? ending.error : null)) {
    const notBefore = new Date(now.getTime() + backoffMs(policy, s.attemptsInRun, jitter));
    return [
      {
        type: 'AttemptScheduled',
        data: {
          attemptId: nextAttemptId,
          attemptNumber: nextAttemptNumber(s),
          reason: 'retry',
          notBefore: notBefore.toISOString(),
          queueDeadline: plus(notBefore, s.workflow.graph.timeouts.queueMs),
          scheduledAt: at,
        },
      },
    ];
  }
  if (ending.kind === 'timed_out') return [{ type: 'ExecutionTimedOut', data: { reason: 'attempt timed out and no retry is left', at } }];
  return [{ type: 'ExecutionFailed', data: { error: ending.error, at } }];
}

function timeOutAttempt(command: TimeOutAttempt, state: ExecutionState): ExecutionEvent[] {
  const s = started(state);
  const { data, metadata } = command;
  const now = metadata.now;
  const attempt = currentAttempt(s);
  if (!attempt || attempt.attemptId !== data.attemptId)
    throw new StaleAttemptError('attempt is not the current attempt', { attemptId: data.attemptId });
  let reason: 'lease_expired' | 'queue_deadline';
  let deadline: string;
  if (attempt.status === 'running') [reason, deadline] = ['lease_expired', attempt.leaseExpiresAt];
  else if (attempt.status === 'queued') [reason, deadline] = ['queue_deadline', attempt.queueDeadline];
  else throw new StaleAttemptError(`attempt is ${attempt.status}`, { attemptId: data.attemptId });
  // A heartbeat that won the race moved the deadline: the attempt stays alive.
  if (now.getTime() < Date.parse(deadline)) throw new InvalidStateError('deadline has not passed', { attemptId: data.attemptId, deadline });
  const at = iso(now);
  return [
    { type: 'AttemptTimedOut', data: { attemptId: data.attemptId, reason, deadline, at } },
    ...afterAttemptEnded(s, { kind: 'timed_out' }, data.nextAttemptId, data.jitter, now),
  ];
}

function requestCancel(command: RequestCancel, state: ExecutionState): ExecutionEvent[] {
  const s = started(state);
  const at = iso(command.metadata.now);
  if (s.status === 'cancelled' || s.cancelRequest) return [];
  if (isFinal(s)) throw new InvalidStateError(`execution already ${s.status}`, { status: s.status });
  const requested: ExecutionEvent = {
    type: 'CancelRequested',
    data: { reason: command.data.reason, requestedBy: command.metadata.actor, at },
  };
  const attempt = currentAttempt(s);
  // Promise 7 (docs/architecture.md): a queued attempt is cancelled at once; a running one learns it from its next heartbeat.
  if (attempt?.status === 'running') return [requested];
  const cancelAttempt: ExecutionEvent[] =
    attempt?.status === 'queued' ? [{ type: 'AttemptCancelled', data: { attemptId: attempt.attemptId, at } }] : [];
  return [requested, ...cancelAttempt, { type: 'ExecutionCancelled', data: { reason: command.data.reason, at } }];
}

const REDRIVABLE = ['failed', 'timed_out', 'cancelled'];

function requestRedrive(command: RequestRedrive, state: ExecutionState): ExecutionEvent[] {
  const s = started(state);
  const { data, metadata } = command;
  const previous = s.redrives[data.idempotencyKey];
  if (previous) {
    if (previous.fingerprint === data.fingerprint) return [];
    throw new IdempotencyConflictError('this Idempotency-Key was used with a different request');
  }
  if (!REDRIVABLE.includes(s.status)) throw new InvalidStateError(`cannot redrive an execution that is ${s.status}`, { status: s.status });
  const at = iso(metadata.now);
  const attemptNumber = nextAttemptNumber(s);
  return [
    {
      type: 'RedriveRequested',
      data: {
        redriveId: data.redriveId,
        idempotencyKey: data.idempotencyKey,
        requestFingerprint: data.fingerprint,
        attemptId: data.attemptId,
        attemptNumber,
        requestedBy: metadata.actor,
        at,
      },
    },
    // In a workspace with a concurrency bound the new run waits for a slot, as a start does.
    data.waitFor
      ? {
          type: 'ExecutionAwaitingSlot',
          data: { attemptId: data.attemptId, attemptNumber, reason: 'redrive', waitingFor: data.waitFor, at },
        }
      : {
          type: 'AttemptScheduled',
          data: {
            attemptId: data.attemptId,
            attemptNumber,
            reason: 'redrive',
            notBefore: at,
            queueDeadline: plus(metadata.now, s.workflow.graph.timeouts.queueMs),
            scheduledAt: at,
          },
        },
  ];
}

function decide(command: ExecutionCommand, state: ExecutionState, limits: ExecutionLimits): ExecutionEvent[] {
  const decided = decideCommand(command, state, limits);
  if (state.status === 'not_started') return decided;
  // A cancel request or the execution's end ends its live tasks, timers and signal waits in the same append.
  const now = command.metadata.now;
  const events = withSlotYielded(state, withDurableWaitsCancelled(state, withTasksCancelled(state, decided, now), now), now);
  // Promise 13 (docs/architecture.md): one execution's history is bounded; beyond it nothing is appended.
  requireRoomInHistory(state, command, events, limits);
  return events;
}

function decideCommand(command: ExecutionCommand, state: ExecutionState, limits: ExecutionLimits): ExecutionEvent[] {
  switch (command.type) {
    case 'StartExecution':
      return startExecution(command, state);
    case 'AdmitExecution':
      return admitExecution(started(state), command);
    case 'ClaimAttempt':
      return claimAttempt(command, state);
    case 'Heartbeat':
      return heartbeat(command, state);
    case 'RecordNodeResult':
      return recordNodeResult(command, state);
    case 'RecordMapItems':
      return recordMapItems(started(state), command, (s) => requireLiveClaim(s, command.data, command.metadata.now));
    case 'CompleteAttempt':
      return completeAttempt(command, state);
    case 'TimeOutAttempt':
      return timeOutAttempt(command, state);
    case 'TimeOutExecution':
      return timeOutExecution(started(state), command);
    case 'RequestCancel':
      return requestCancel(command, state);
    case 'RequestRedrive':
      return requestRedrive(command, state);
    case 'DecideApproval':
      return decideApproval(started(state), command);
    case 'ClaimTask':
      return claimTask(started(state), command);
    case 'HeartbeatTask':
      return heartbeatTask(started(state), command, limits);
    case 'CompleteTask':
      return completeTask(started(state), command);
    case 'TimeOutTask':
      return timeOutTask(started(state), command);
    case 'RecordChildResult':
      return recordChildResult(started(state), command);
    case 'FireTimer':
      return fireTimer(started(state), command);
    case 'SendSignal':
      return sendSignal(started(state), command, limits);
    default: {
      const unknown: never = command;
      throw new Error(`unknown command ${(unknown as { type: string }).type}`);
    }
  }
}

/** The execution decider under the given bounds of what one execution may hold (configuration's `executionLimitsOf`). */
export function createExecutionDecider(limits: ExecutionLimits): Decider<ExecutionCommand, ExecutionEvent, ExecutionState> {
  return { decide: (command, state) => decide(command, state, limits), evolve: evolveCountingHistory, initialState };
}

/** The decider under the default bounds. */
export const executionDecider = createExecutionDecider(DEFAULT_EXECUTION_LIMITS);
