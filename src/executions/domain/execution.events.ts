import { z } from 'zod';
import type { DomainEvent } from '../../core/decider.js';

/**
 * Facts of one execution stream (`execution-<executionId>`). Every event payload is checked
 * with these schemas when read back from the store; times are ISO-8601 strings.
 */
const isoTime = z.iso.datetime({ offset: true });
const json = z.unknown();

export const executionErrorSchema = z.object({
  code: z.string().min(1).max(128),
  message: z.string().max(4096),
  /** False when the failure must not be retried whatever the policy says. */
  retryable: z.boolean().optional(),
});
export type ExecutionError = z.infer<typeof executionErrorSchema>;

export const retryPolicySchema = z.object({
  maxAttempts: z.number().int().min(1),
  initialIntervalMs: z.number().int().min(0),
  backoffCoefficient: z.number().min(1),
  maxIntervalMs: z.number().int().min(0),
  nonRetryable: z.array(z.string()),
});
export type RetryPolicy = z.infer<typeof retryPolicySchema>;

export const timeoutsSchema = z.object({
  queueMs: z.number().int().min(1),
  leaseMs: z.number().int().min(1),
  executionMs: z.number().int().min(1),
});
export type Timeouts = z.infer<typeof timeoutsSchema>;

/** The graph revision an execution runs, snapshotted into its first event. */
export const workflowSnapshotSchema = z.object({
  workflowId: z.string(),
  name: z.string(),
  revision: z.number().int().min(1),
  digest: z.string(),
  graph: z
    .object({
      nodes: z.array(z.looseObject({ id: z.string(), type: z.string() })),
      edges: z.array(z.object({ from: z.string(), to: z.string() })),
      retry: retryPolicySchema,
      timeouts: timeoutsSchema,
    })
    .loose(),
});
export type WorkflowSnapshot = z.infer<typeof workflowSnapshotSchema>;

/** The schedule fire that started an execution (docs/api.md, "Schedules"). */
export const scheduledBySchema = z.object({ schedule: z.string(), fireTime: isoTime });
export type ScheduledBy = z.infer<typeof scheduledBySchema>;

/** A node the attempt stopped at, and what it waits for. */
export const waitSchema = z.object({ nodeId: z.string(), kind: z.enum(['approval', 'task', 'subworkflow', 'timer', 'signal']) });
export type Wait = z.infer<typeof waitSchema>;

/** Position of an item in the array a map node runs over. */
const mapItemIndex = z.number().int().min(0);

/**
 * The parent of a child execution (a `subworkflow` node's run): its execution, the node, and how
 * deep the child sits (a top-level execution is at depth 0, its children at 1). `rootExecutionId`
 * (the top-level execution, whose tree the child counts in) and `ancestors` (the workflow names
 * from the root down to the parent) are optional: children started before trees were bounded
 * have neither, and read as the roots of trees of their own (subworkflow-children.ts).
 */
export const parentLinkSchema = z.object({
  executionId: z.string(),
  nodeId: z.string(),
  depth: z.number().int().min(1),
  rootExecutionId: z.string().optional(),
  ancestors: z.array(z.string()).optional(),
});
export type ParentLink = z.infer<typeof parentLinkSchema>;

/** How a child execution ended, as its parent records it. */
export const childEndSchema = z.enum(['succeeded', 'failed', 'timed_out', 'cancelled']);
export type ChildEnd = z.infer<typeof childEndSchema>;

/**
 * Durable timers and signals (docs/architecture.md, "Waiting steps"). A `delay` node's timer and a
 * `wait_signal` node's time limit are timers: the due time is computed once, by the decider, and
 * kept here, so a resumed attempt never starts a wait again; the `timer` role appends the firing.
 */
const durableWaitEventSchemas = {
  TimerScheduled: z.object({
    /** `<executionId>.<nodeId>.t<seq>`: the node's seq-th timer. */
    timerId: z.string(),
    nodeId: z.string(),
    attemptId: z.string(),
    purpose: z.enum(['delay', 'signal_timeout']),
    dueAt: isoTime,
    scheduledAt: isoTime,
  }),
  TimerFired: z.object({
    timerId: z.string(),
    nodeId: z.string(),
    dueAt: isoTime,
    firedAt: isoTime,
    /** How long after its due time it fired (downtime shows here). */
    lateByMs: z.number().int().min(0),
  }),
  /** The execution was cancelled or ended, or the signal arrived, before the timer was due. */
  TimerCancelled: z.object({ timerId: z.string(), at: isoTime }),
  /** A signal sent to the execution; kept until a `wait_signal` node of its name takes it (oldest first). */
  SignalReceived: z.object({
    signalId: z.string(),
    name: z.string(),
    payload: json,
    /** The send's Idempotency-Key and a digest of its name and payload, when it had a key. */
    idempotency: z.object({ key: z.string(), fingerprint: z.string() }).nullable(),
    sentBy: z.string(),
    at: isoTime,
  }),
  /** A `wait_signal` node waits for a signal of `name` (its `tries`-th wait in this run of the node). */
  SignalAwaited: z.object({
    nodeId: z.string(),
    attemptId: z.string(),
    name: z.string(),
    tries: z.number().int().min(1),
    /** The timer of its `timeoutMs`; null without one. */
    timerId: z.string().nullable(),
    at: isoTime,
  }),
  /** The signal was taken by the node (its output is the signal's payload). */
  SignalDelivered: z.object({ signalId: z.string(), nodeId: z.string(), at: isoTime }),
  /** The execution was cancelled or ended while the node waited. */
  SignalWaitCancelled: z.object({ nodeId: z.string(), at: isoTime }),
} as const;

const attemptReason = z.enum(['start', 'retry', 'redrive', 'resume']);
export type AttemptReason = z.infer<typeof attemptReason>;

export const executionEventSchemas = {
  /** Schema version 2; version 1 carried `idempotencyKey` and `requestFingerprint` side by side (upcast on read). */
  ExecutionStarted: z.object({
    executionId: z.string(),
    workspaceId: z.string(),
    workflow: workflowSnapshotSchema,
    input: z.record(z.string(), json),
    /** The start's Idempotency-Key and the fingerprint of its request, when it had a key. */
    idempotency: z.object({ key: z.string(), fingerprint: z.string() }).nullable(),
    /**
     * The schedule fire that started it; absent for a start over HTTP. Optional, so it needed no
     * new schema version: events recorded before schedules read as they were, and older readers
     * ignore the field (zod drops unknown keys).
     */
    scheduledBy: scheduledBySchema.optional(),
    /** Set for a child execution started by a `subworkflow` node; optional like `scheduledBy`. */
    parent: parentLinkSchema.optional(),
    startedBy: z.string(),
    startedAt: isoTime,
  }),
  AttemptScheduled: z.object({
    attemptId: z.string(),
    attemptNumber: z.number().int().min(1),
    reason: attemptReason,
    notBefore: isoTime,
    queueDeadline: isoTime,
    scheduledAt: isoTime,
  }),
  /**
   * The run (a start or a redrive) waits for a slot of its workspace's concurrency bound; the
   * admission schedules `attemptId` once one is granted (docs/architecture.md, "Workspace quotas").
   */
  ExecutionAwaitingSlot: z.object({
    attemptId: z.string(),
    attemptNumber: z.number().int().min(1),
    /** `resume`: the run gave its slot back while it waited only for child executions (`SlotYielded`), and goes on now. */
    reason: z.enum(['start', 'redrive', 'resume']),
    waitingFor: z.enum(['workspace_quota']),
    at: isoTime,
  }),
  /**
   * The run gave back the quota slot `attemptId` took: its attempt is suspended and it waits for
   * nothing but child executions, which may need that slot. Its resume waits for a slot again.
   */
  SlotYielded: z.object({ attemptId: z.string(), at: isoTime }),
  AttemptClaimed: z.object({
    attemptId: z.string(),
    workerId: z.string(),
    fencingToken: z.number().int().min(1),
    leaseExpiresAt: isoTime,
    claimedAt: isoTime,
  }),
  LeaseExtended: z.object({ attemptId: z.string(), leaseExpiresAt: isoTime, extendedAt: isoTime }),
  NodeStarted: z.object({ attemptId: z.string(), nodeId: z.string(), at: isoTime }),
  NodeSucceeded: z.object({ attemptId: z.string(), nodeId: z.string(), output: json, at: isoTime }),
  NodeFailed: z.object({ attemptId: z.string(), nodeId: z.string(), error: executionErrorSchema, at: isoTime }),
  NodeSkipped: z.object({ attemptId: z.string(), nodeId: z.string(), reason: z.string(), at: isoTime }),
  /**
   * Items of a running `map` node: which started, which succeeded (with their outputs) and which
   * failed past the inner node's retries, batched as the worker reports them. A later attempt
   * reuses the outputs of the items that succeeded and runs only the others.
   */
  MapItemsStarted: z.object({ attemptId: z.string(), nodeId: z.string(), indexes: z.array(mapItemIndex), at: isoTime }),
  MapItemsCompleted: z.object({
    attemptId: z.string(),
    nodeId: z.string(),
    items: z.array(z.object({ index: mapItemIndex, output: json })),
    at: isoTime,
  }),
  MapItemsFailed: z.object({
    attemptId: z.string(),
    nodeId: z.string(),
    items: z.array(z.object({ index: mapItemIndex, error: executionErrorSchema })),
    at: isoTime,
  }),
  /** An approval node waits for a human decision bound to the digest of this exact action. */
  NodeAwaitingApproval: z.object({ attemptId: z.string(), nodeId: z.string(), action: json, actionDigest: z.string(), at: isoTime }),
  /**
   * Schema version 3; before it, one `nodeId` (an approval) stood where `waits` is (upcast on read).
   * Every runnable node of the attempt waits for a fact from outside the engine (a decision, a
   * task's end): the attempt ended and freed its worker; the fact that ends a wait schedules a
   * resume attempt (docs/architecture.md, "Waiting steps").
   */
  AttemptSuspended: z.object({ attemptId: z.string(), waits: z.array(waitSchema).min(1), at: isoTime }),
  ApprovalGranted: z.object({
    nodeId: z.string(),
    actionDigest: z.string(),
    decidedBy: z.string(),
    comment: z.string().nullable(),
    at: isoTime,
  }),
  ApprovalRejected: z.object({
    nodeId: z.string(),
    actionDigest: z.string(),
    decidedBy: z.string(),
    comment: z.string().nullable(),
    at: isoTime,
  }),
  /**
   * A task node asked for its task: `taskId` names this node's `seq`-th task of the execution
   * (`<executionId>.<nodeId>.<seq>`), `taskAttempt` counts the tries of the node's current run
   * (what its retry policy counts). Not handed out before `notBefore`.
   */
  TaskScheduled: z.object({
    taskId: z.string(),
    nodeId: z.string(),
    attemptId: z.string(),
    queue: z.string(),
    input: json,
    taskAttempt: z.number().int().min(1),
    timeoutMs: z.number().int().min(1).nullable(),
    heartbeatTimeoutMs: z.number().int().min(1),
    notBefore: isoTime,
    scheduledAt: isoTime,
  }),
  /** A poller's claim won: it alone may heartbeat and complete the task, fenced by its token. */
  TaskClaimed: z.object({
    taskId: z.string(),
    workerId: z.string(),
    fencingToken: z.number().int().min(1),
    leaseExpiresAt: isoTime,
    /** When the claim must have completed whatever its heartbeats (`timeoutMs` after the claim); null without one. */
    timeoutAt: isoTime.nullable(),
    claimedAt: isoTime,
  }),
  /** `progressKept`: how many of the latest progress entries the task keeps with this one (absent in older events: one). */
  TaskLeaseExtended: z.object({
    taskId: z.string(),
    leaseExpiresAt: isoTime,
    progress: json.optional(),
    progressKept: z.number().int().min(1).optional(),
    at: isoTime,
  }),
  TaskSucceeded: z.object({ taskId: z.string(), output: json, at: isoTime }),
  TaskFailed: z.object({ taskId: z.string(), error: executionErrorSchema, at: isoTime }),
  TaskTimedOut: z.object({ taskId: z.string(), reason: z.enum(['lease_expired', 'timeout']), deadline: isoTime, at: isoTime }),
  /** The execution was cancelled or ended while the task was waiting or claimed. */
  TaskCancelled: z.object({ taskId: z.string(), at: isoTime }),
  /**
   * A `subworkflow` node asked for its child: `childExecutionId` is derived from this execution,
   * the node and the node's child count, so asking again never names a second child. The child's
   * own stream is started right after by the subworkflow manager (docs/architecture.md,
   * "Sub-workflows"); `revision` null means the latest at that start.
   */
  ChildExecutionStarted: z.object({
    nodeId: z.string(),
    attemptId: z.string(),
    childExecutionId: z.string(),
    workflow: z.string(),
    revision: z.number().int().min(1).nullable(),
    input: json,
    depth: z.number().int().min(1),
    at: isoTime,
  }),
  /** The child ended; followed by the node's result when the parent still waits for it. */
  ChildExecutionEnded: z.object({ nodeId: z.string(), childExecutionId: z.string(), status: childEndSchema, at: isoTime }),
  ...durableWaitEventSchemas,
  AttemptSucceeded: z.object({ attemptId: z.string(), output: json, at: isoTime }),
  AttemptFailed: z.object({ attemptId: z.string(), error: executionErrorSchema, at: isoTime }),
  AttemptTimedOut: z.object({
    attemptId: z.string(),
    reason: z.enum(['lease_expired', 'queue_deadline', 'execution_deadline']),
    deadline: isoTime,
    at: isoTime,
  }),
  AttemptCancelled: z.object({ attemptId: z.string(), at: isoTime }),
  CancelRequested: z.object({ reason: z.string().nullable(), requestedBy: z.string(), at: isoTime }),
  RedriveRequested: z.object({
    redriveId: z.string(),
    idempotencyKey: z.string(),
    requestFingerprint: z.string(),
    attemptId: z.string(),
    attemptNumber: z.number().int().min(1),
    requestedBy: z.string(),
    at: isoTime,
  }),
  ExecutionSucceeded: z.object({ output: json, at: isoTime }),
  ExecutionFailed: z.object({ error: executionErrorSchema, at: isoTime }),
  ExecutionTimedOut: z.object({ reason: z.string(), at: isoTime }),
  ExecutionCancelled: z.object({ reason: z.string().nullable(), at: isoTime }),
} as const;

type Schemas = typeof executionEventSchemas;
export type ExecutionEventType = keyof Schemas;
export type ExecutionEventOf<T extends ExecutionEventType> = DomainEvent<T, z.infer<Schemas[T]>>;
export type ExecutionEvent = { [T in ExecutionEventType]: ExecutionEventOf<T> }[ExecutionEventType];

export const EXECUTION_EVENT_TYPES = Object.keys(executionEventSchemas) as ExecutionEventType[];
