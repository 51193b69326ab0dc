import { systemActor, workerActor } from '../../../src/core/actors.js';
import type { CommandMetadata } from '../../../src/core/decider.js';
import { deciderSpecification } from '../core/decider-specification.js';
import type {
  AdmitExecution,
  AttemptOutcome,
  ClaimAttempt,
  CompleteAttempt,
  Fence,
  Heartbeat,
  NodeResultKind,
  RecordNodeResult,
  RequestCancel,
  RequestRedrive,
  StartExecution,
  TimeOutAttempt,
  TimeOutExecution,
  WaitingFor,
} from '../../../src/executions/domain/execution.commands.js';
import { executionDecider } from '../../../src/executions/domain/execution.decider.js';
import type {
  AttemptReason,
  ExecutionError,
  ExecutionEvent,
  RetryPolicy,
  Timeouts,
  WorkflowSnapshot,
} from '../../../src/executions/domain/execution.events.js';

/**
 * Builders for execution specifications. Time is written as milliseconds after T0 so that a
 * spec reads `claim({ at: 1_000 })`; every id is fixed so expected events can be spelled out.
 */
export const T0 = Date.parse('2030-01-01T00:00:00.000Z');
export const time = (ms: number): Date => new Date(T0 + ms);
export const iso = (ms: number): string => time(ms).toISOString();

export const QUEUE_MS = 60_000;
export const LEASE_MS = 30_000;

export const EXECUTION_ID = '0b8f4e0a-1c2d-4e5f-8a9b-000000000001';
export const WORKSPACE_ID = '0b8f4e0a-1c2d-4e5f-8a9b-0000000000a1';
export const OPERATOR = 'operator@example.test';
export const ATTEMPT_1 = '0b8f4e0a-1c2d-4e5f-8a9b-0000000a0001';
export const ATTEMPT_2 = '0b8f4e0a-1c2d-4e5f-8a9b-0000000a0002';
export const ATTEMPT_3 = '0b8f4e0a-1c2d-4e5f-8a9b-0000000a0003';
export const ATTEMPT_4 = '0b8f4e0a-1c2d-4e5f-8a9b-0000000a0004';
export const ATTEMPT_5 = '0b8f4e0a-1c2d-4e5f-8a9b-0000000a0005';
export const WORKER_A = 'worker-a';
export const WORKER_B = 'worker-b';
export const REDRIVE_1 = '0b8f4e0a-1c2d-4e5f-8a9b-0000000d0001';
export const REDRIVE_2 = '0b8f4e0a-1c2d-4e5f-8a9b-0000000d0002';

/** No automatic retry: the workflow default. */
export const NO_RETRY: RetryPolicy = {
  maxAttempts: 1,
  initialIntervalMs: 1_000,
  backoffCoefficient: 2,
  maxIntervalMs: 60_000,
  nonRetryable: [],
};
/** Three attempts; with jitter 0 the first retry waits 1 000 ms, the second 2 000 ms. */
export const THREE_ATTEMPTS: RetryPolicy = {
  maxAttempts: 3,
  initialIntervalMs: 2_000,
  backoffCoefficient: 2,
  maxIntervalMs: 60_000,
  nonRetryable: ['bad_request'],
};

export function aWorkflow(overrides: { retry?: RetryPolicy; timeouts?: Partial<Timeouts> } = {}): WorkflowSnapshot {
  return {
    workflowId: '0b8f4e0a-1c2d-4e5f-8a9b-0000000f0001',
    name: 'nightly-export',
    revision: 1,
    digest: 'sha256:workflow-revision-1',
    graph: {
      nodes: [
        { id: 'extract', type: 'noop' },
        { id: 'load', type: 'noop' },
      ],
      edges: [{ from: 'extract', to: 'load' }],
      retry: overrides.retry ?? NO_RETRY,
      timeouts: { queueMs: QUEUE_MS, leaseMs: LEASE_MS, executionMs: 3_600_000, ...overrides.timeouts },
    },
  };
}

export const FAILURE: ExecutionError = { code: 'upstream_unavailable', message: 'upstream answered 503' };

const meta = (at: number, actor: string): CommandMetadata => ({ now: time(at), actor });
const fenceOf = (f: Partial<Fence>): Fence => ({
  attemptId: f.attemptId ?? ATTEMPT_1,
  workerId: f.workerId ?? WORKER_A,
  fencingToken: f.fencingToken ?? 1,
});

type Idempotency = StartExecution['data']['idempotency'];

export function startExecution(
  o: { at?: number; idempotency?: Idempotency; workflow?: WorkflowSnapshot; waitFor?: WaitingFor } = {},
): StartExecution {
  return {
    type: 'StartExecution',
    data: {
      executionId: EXECUTION_ID,
      workspaceId: WORKSPACE_ID,
      workflow: o.workflow ?? aWorkflow(),
      input: { day: '2029-12-31' },
      idempotency: o.idempotency === undefined ? null : o.idempotency,
      attemptId: ATTEMPT_1,
      ...(o.waitFor === undefined ? {} : { waitFor: o.waitFor }),
    },
    metadata: meta(o.at ?? 0, OPERATOR),
  };
}

/** The admission, granted a slot, schedules the attempt the run waits with. */
export function admitExecution(o: { attemptId?: string; at: number }): AdmitExecution {
  return { type: 'AdmitExecution', data: { attemptId: o.attemptId ?? ATTEMPT_1 }, metadata: meta(o.at, 'system:dispatcher') };
}

export function claimAttempt(o: { attemptId?: string; workerId?: string; at: number }): ClaimAttempt {
  const workerId = o.workerId ?? WORKER_A;
  return { type: 'ClaimAttempt', data: { attemptId: o.attemptId ?? ATTEMPT_1, workerId }, metadata: meta(o.at, workerActor(workerId)) };
}

export function heartbeat(o: Partial<Fence> & { at: number }): Heartbeat {
  const fence = fenceOf(o);
  return { type: 'Heartbeat', data: fence, metadata: meta(o.at, workerActor(fence.workerId)) };
}

export function recordNodeResult(
  o: Partial<Fence> & { at: number; kind: NodeResultKind; nodeId: string; output?: unknown; error?: ExecutionError; reason?: string },
): RecordNodeResult {
  const fence = fenceOf(o);
  const data: RecordNodeResult['data'] = { ...fence, kind: o.kind, nodeId: o.nodeId };
  if (o.output !== undefined) data.output = o.output;
  if (o.error !== undefined) data.error = o.error;
  if (o.reason !== undefined) data.reason = o.reason;
  return { type: 'RecordNodeResult', data, metadata: meta(o.at, workerActor(fence.workerId)) };
}

export function completeAttempt(
  o: Partial<Fence> & {
    at: number;
    outcome: AttemptOutcome;
    output?: unknown;
    error?: ExecutionError;
    nextAttemptId?: string;
    jitter?: number;
  },
): CompleteAttempt {
  const fence = fenceOf(o);
  const data: CompleteAttempt['data'] = {
    ...fence,
    outcome: o.outcome,
    nextAttemptId: o.nextAttemptId ?? ATTEMPT_2,
    jitter: o.jitter ?? 0,
  };
  if (o.output !== undefined) data.output = o.output;
  if (o.error !== undefined) data.error = o.error;
  return { type: 'CompleteAttempt', data, metadata: meta(o.at, workerActor(fence.workerId)) };
}

export function timeOutAttempt(o: { attemptId?: string; nextAttemptId?: string; jitter?: number; at: number }): TimeOutAttempt {
  return {
    type: 'TimeOutAttempt',
    data: { attemptId: o.attemptId ?? ATTEMPT_1, nextAttemptId: o.nextAttemptId ?? ATTEMPT_2, jitter: o.jitter ?? 0 },
    metadata: meta(o.at, systemActor('watchdog')),
  };
}

export function timeOutExecution(o: { at: number }): TimeOutExecution {
  return { type: 'TimeOutExecution', data: {}, metadata: meta(o.at, systemActor('watchdog')) };
}

export function requestCancel(o: { at: number; reason?: string | null }): RequestCancel {
  return {
    type: 'RequestCancel',
    data: { reason: o.reason === undefined ? 'no longer needed' : o.reason },
    metadata: meta(o.at, OPERATOR),
  };
}

export function requestRedrive(o: {
  at: number;
  redriveId?: string;
  idempotencyKey?: string;
  fingerprint?: string;
  attemptId?: string;
  waitFor?: WaitingFor;
}): RequestRedrive {
  return {
    type: 'RequestRedrive',
    data: {
      redriveId: o.redriveId ?? REDRIVE_1,
      idempotencyKey: o.idempotencyKey ?? 'redrive-key-1',
      fingerprint: o.fingerprint ?? 'fingerprint-redrive-1',
      attemptId: o.attemptId ?? ATTEMPT_2,
      ...(o.waitFor === undefined ? {} : { waitFor: o.waitFor }),
    },
    metadata: meta(o.at, OPERATOR),
  };
}

export function executionStarted(o: { at?: number; idempotency?: Idempotency; workflow?: WorkflowSnapshot } = {}): ExecutionEvent {
  const command = startExecution(o);
  return {
    type: 'ExecutionStarted',
    data: {
      executionId: EXECUTION_ID,
      workspaceId: WORKSPACE_ID,
      workflow: command.data.workflow,
      input: command.data.input,
      idempotency: command.data.idempotency,
      startedBy: OPERATOR,
      startedAt: iso(o.at ?? 0),
    },
  };
}

/** The queue deadline is `queueMs` after `notBefore`, which defaults to the scheduling time. */
export function attemptScheduled(
  o: { attemptId?: string; attemptNumber?: number; reason?: AttemptReason; at?: number; notBefore?: number; queueMs?: number } = {},
): ExecutionEvent {
  const at = o.at ?? 0;
  const notBefore = o.notBefore ?? at;
  return {
    type: 'AttemptScheduled',
    data: {
      attemptId: o.attemptId ?? ATTEMPT_1,
      attemptNumber: o.attemptNumber ?? 1,
      reason: o.reason ?? 'start',
      notBefore: iso(notBefore),
      queueDeadline: iso(notBefore + (o.queueMs ?? QUEUE_MS)),
      scheduledAt: iso(at),
    },
  };
}

/** The run waits for a slot of its workspace's quota before `attemptId` is scheduled. */
export function executionAwaitingSlot(
  o: { attemptId?: string; attemptNumber?: number; reason?: 'start' | 'redrive' | 'resume'; at?: number } = {},
): ExecutionEvent {
  return {
    type: 'ExecutionAwaitingSlot',
    data: {
      attemptId: o.attemptId ?? ATTEMPT_1,
      attemptNumber: o.attemptNumber ?? 1,
      reason: o.reason ?? 'start',
      waitingFor: 'workspace_quota',
      at: iso(o.at ?? 0),
    },
  };
}

/** The lease runs `leaseMs` from the claim. */
export function attemptClaimed(o: Partial<Fence> & { at: number; leaseMs?: number }): ExecutionEvent {
  const { attemptId, workerId, fencingToken } = fenceOf(o);
  return {
    type: 'AttemptClaimed',
    data: { attemptId, workerId, fencingToken, leaseExpiresAt: iso(o.at + (o.leaseMs ?? LEASE_MS)), claimedAt: iso(o.at) },
  };
}

export function leaseExtended(o: { attemptId?: string; at: number }): ExecutionEvent {
  return {
    type: 'LeaseExtended',
    data: { attemptId: o.attemptId ?? ATTEMPT_1, leaseExpiresAt: iso(o.at + LEASE_MS), extendedAt: iso(o.at) },
  };
}

type NodeEventInput = { attemptId?: string; nodeId: string; at: number };
export const nodeStarted = (o: NodeEventInput): ExecutionEvent => ({
  type: 'NodeStarted',
  data: { attemptId: o.attemptId ?? ATTEMPT_1, nodeId: o.nodeId, at: iso(o.at) },
});
export const nodeSucceeded = (o: NodeEventInput & { output: unknown }): ExecutionEvent => ({
  type: 'NodeSucceeded',
  data: { attemptId: o.attemptId ?? ATTEMPT_1, nodeId: o.nodeId, output: o.output, at: iso(o.at) },
});
export const nodeFailed = (o: NodeEventInput & { error: ExecutionError }): ExecutionEvent => ({
  type: 'NodeFailed',
  data: { attemptId: o.attemptId ?? ATTEMPT_1, nodeId: o.nodeId, error: o.error, at: iso(o.at) },
});
export const nodeSkipped = (o: NodeEventInput & { reason: string }): ExecutionEvent => ({
  type: 'NodeSkipped',
  data: { attemptId: o.attemptId ?? ATTEMPT_1, nodeId: o.nodeId, reason: o.reason, at: iso(o.at) },
});

type AttemptEndInput = { attemptId?: string; at: number };
export const attemptSucceeded = (o: AttemptEndInput & { output: unknown }): ExecutionEvent => ({
  type: 'AttemptSucceeded',
  data: { attemptId: o.attemptId ?? ATTEMPT_1, output: o.output, at: iso(o.at) },
});
export const attemptFailed = (o: AttemptEndInput & { error: ExecutionError }): ExecutionEvent => ({
  type: 'AttemptFailed',
  data: { attemptId: o.attemptId ?? ATTEMPT_1, error: o.error, at: iso(o.at) },
});
export const attemptTimedOut = (
  o: AttemptEndInput & { reason: 'lease_expired' | 'queue_deadline' | 'execution_deadline'; deadline: number },
): ExecutionEvent => ({
  type: 'AttemptTimedOut',
  data: { attemptId: o.attemptId ?? ATTEMPT_1, reason: o.reason, deadline: iso(o.deadline), at: iso(o.at) },
});
export const attemptCancelled = (o: AttemptEndInput): ExecutionEvent => ({
  type: 'AttemptCancelled',
  data: { attemptId: o.attemptId ?? ATTEMPT_1, at: iso(o.at) },
});

export const cancelRequested = (o: { at: number; reason?: string | null }): ExecutionEvent => ({
  type: 'CancelRequested',
  data: { reason: o.reason === undefined ? 'no longer needed' : o.reason, requestedBy: OPERATOR, at: iso(o.at) },
});

export function redriveRequested(o: {
  at: number;
  attemptNumber: number;
  redriveId?: string;
  idempotencyKey?: string;
  fingerprint?: string;
  attemptId?: string;
}): ExecutionEvent {
  const command = requestRedrive(o);
  return {
    type: 'RedriveRequested',
    data: {
      redriveId: command.data.redriveId,
      idempotencyKey: command.data.idempotencyKey,
      requestFingerprint: command.data.fingerprint,
      attemptId: command.data.attemptId,
      attemptNumber: o.attemptNumber,
      requestedBy: OPERATOR,
      at: iso(o.at),
    },
  };
}

export const executionSucceeded = (o: { at: number; output: unknown }): ExecutionEvent => ({
  type: 'ExecutionSucceeded',
  data: { output: o.output, at: iso(o.at) },
});
export const executionFailed = (o: { at: number; error: ExecutionError }): ExecutionEvent => ({
  type: 'ExecutionFailed',
  data: { error: o.error, at: iso(o.at) },
});
export const executionTimedOut = (o: { at: number }): ExecutionEvent => ({
  type: 'ExecutionTimedOut',
  data: { reason: 'attempt timed out and no retry is left', at: iso(o.at) },
});
export const executionCancelled = (o: { at: number; reason?: string | null }): ExecutionEvent => ({
  type: 'ExecutionCancelled',
  data: { reason: o.reason === undefined ? 'no longer needed' : o.reason, at: iso(o.at) },
});

/** Started at 0; attempt 1 queued until its deadline at 60 000. */
export const aQueuedExecution = (o: { workflow?: WorkflowSnapshot; idempotency?: Idempotency } = {}): ExecutionEvent[] => [
  executionStarted(o),
  attemptScheduled(),
];

/** Started at 0 in a workspace with a concurrency bound: attempt 1 waits for a slot. */
export const aWaitingExecution = (o: { workflow?: WorkflowSnapshot; idempotency?: Idempotency } = {}): ExecutionEvent[] => [
  executionStarted(o),
  executionAwaitingSlot(),
];

/** Attempt 1 claimed by worker A at 1 000 with fencing token 1: its lease expires at 31 000. */
export const aRunningExecution = (o: { workflow?: WorkflowSnapshot } = {}): ExecutionEvent[] => [
  ...aQueuedExecution(o),
  attemptClaimed({ at: 1_000 }),
];

/** Attempt 1 failed at 5 000 with no retry left. */
export const aFailedExecution = (o: { workflow?: WorkflowSnapshot } = {}): ExecutionEvent[] => [
  ...aRunningExecution(o),
  attemptFailed({ at: 5_000, error: FAILURE }),
  executionFailed({ at: 5_000, error: FAILURE }),
];

/** `given(history).when(command).then(events)` over the execution decider. */
export const { given } = deciderSpecification(executionDecider);

/** Under THREE_ATTEMPTS attempt 1 failed at 5 000; retry attempt 2 waits until 6 000 (queue deadline 66 000). */
export const aRetryScheduled = (): ExecutionEvent[] => [
  ...aRunningExecution({ workflow: aWorkflow({ retry: THREE_ATTEMPTS }) }),
  attemptFailed({ at: 5_000, error: FAILURE }),
  attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 5_000, notBefore: 6_000 }),
];
