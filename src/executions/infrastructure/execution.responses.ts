import { z } from 'zod';
import { anyJson, identifierField, positionField, timestampField, uuidField } from '../../http/openapi/response-fields.js';
import { workflowGraphSchema } from '../../workflows/domain/workflow-graph.schema.js';
import { EXECUTION_STATUSES } from '../application/request-schemas.js';
import { executionErrorSchema as executionErrorEventSchema } from '../domain/execution.events.js';
import { historyEventSchema } from './timeline-event.responses.js';

/** Response bodies of the execution endpoints: what execution.queries.ts and the command handlers return. */

export const executionStatusField = z.enum(EXECUTION_STATUSES).meta({ id: 'ExecutionStatus' });

/** Why a `queued` execution has no attempt scheduled yet; null when it waits for nothing but a worker (or is not queued). */
const waitingForField = z
  .enum(['workspace_quota'])
  .nullable()
  .meta({ id: 'WaitingFor', description: '`workspace_quota`: it waits for a slot of its workspace’s concurrency bound.' });

const nullableTimestamp = timestampField.nullable();

/** The schedule fire that started an execution; null when it was started over HTTP. */
const scheduledByField = z
  .strictObject({ schedule: identifierField, fireTime: timestampField })
  .nullable()
  .meta({ id: 'ScheduledBy', description: 'The schedule and fire time that started it; null for a start over HTTP.' });

/** An error as events record it, shown by name. */
const executionErrorSchema = executionErrorEventSchema.meta({ id: 'ExecutionError' });
const digestField = z
  .string()
  .regex(/^[0-9a-f]{64}$/)
  .meta({ description: 'sha256 of the canonical JSON, in hex.' });

/** `StartExecutionHandler`: 201 for a new execution, 200 for a replay of the same key and body. */
export const startedExecutionSchema = z
  .strictObject({ executionId: uuidField, workflowRevision: z.number().int().min(1), status: z.literal('queued'), position: positionField })
  .meta({ id: 'StartedExecution' });

const attemptView = z.strictObject({
  attemptId: uuidField,
  attemptNumber: z.number().int().min(1),
  reason: z.enum(['start', 'retry', 'redrive', 'resume']),
  status: z.enum(['queued', 'running', 'suspended', 'succeeded', 'failed', 'timed_out', 'cancelled']),
  workerId: z.string().nullable(),
  leaseExpiresAt: nullableTimestamp,
  queueDeadline: timestampField,
  notBefore: timestampField,
  scheduledAt: timestampField,
  claimedAt: nullableTimestamp,
  endedAt: nullableTimestamp,
  error: executionErrorSchema.nullable(),
});

const nodeView = z.strictObject({
  nodeId: identifierField,
  status: z.enum(['running', 'awaiting_approval', 'waiting', 'succeeded', 'failed', 'skipped', 'cancelled']),
  attemptId: z.string().meta({ description: 'The attempt that ran the node last.' }),
  output: anyJson.meta({ description: 'The node’s output, or null.' }),
  error: executionErrorSchema.nullable(),
  startedAt: nullableTimestamp,
  endedAt: nullableTimestamp,
});

const taskView = z.strictObject({
  taskId: z.string(),
  nodeId: identifierField,
  queue: z.string(),
  taskAttempt: z.number().int().min(1).meta({ description: 'Tries of the node’s current run, this one included.' }),
  status: z.enum(['scheduled', 'claimed', 'succeeded', 'failed', 'timed_out', 'cancelled']),
  input: anyJson,
  workerId: z.string().nullable(),
  notBefore: timestampField,
  scheduledAt: timestampField,
  claimedAt: nullableTimestamp,
  leaseExpiresAt: nullableTimestamp,
  timeoutAt: nullableTimestamp,
  endedAt: nullableTimestamp,
  progress: anyJson.meta({ description: 'The last progress a heartbeat reported, or null.' }),
  recentProgress: z
    .array(z.strictObject({ at: timestampField, progress: anyJson }))
    .meta({ description: 'The latest progress entries (FLOSTRA_TASK_PROGRESS_KEPT at most), oldest first.' }),
  output: anyJson.meta({ description: 'The task’s output once it succeeded, else null.' }),
  error: executionErrorSchema.nullable(),
});

const childView = z
  .strictObject({
    executionId: uuidField,
    nodeId: identifierField,
    workflow: identifierField,
    status: z.enum(['running', 'succeeded', 'failed', 'timed_out', 'cancelled']),
    startedAt: timestampField,
    endedAt: nullableTimestamp,
  })
  .meta({
    id: 'ChildExecution',
    description: 'A child execution one of its `subworkflow` nodes started, as this execution last recorded it.',
  });

const timerView = z.strictObject({
  timerId: z.string(),
  nodeId: identifierField,
  purpose: z.enum(['delay', 'signal_timeout']),
  status: z.enum(['scheduled', 'fired', 'cancelled']),
  dueAt: timestampField,
  firedAt: nullableTimestamp,
  lateByMs: z.number().int().min(0).nullable().meta({ description: 'How long after its due time it fired; null until it fired.' }),
});

const signalView = z.strictObject({
  signalId: uuidField,
  name: z.string(),
  payload: anyJson,
  sentBy: z.string(),
  receivedAt: timestampField,
  deliveredTo: identifierField.nullable().meta({ description: 'The wait_signal node that took it; null while it is kept.' }),
});

/**
 * `boundedView`: one execution from the `executions` read model. Inputs, outputs, progress,
 * payloads and approval actions larger than FLOSTRA_EXECUTION_VIEW_VALUE_MAX_BYTES show as
 * `{ "$omitted": { "bytes": n } }`; the whole value is in the execution's history.
 */
export const executionViewSchema = z
  .strictObject({
    executionId: uuidField,
    workspaceId: identifierField,
    workflow: z.strictObject({ workflowId: uuidField, name: identifierField, revision: z.number().int().min(1), digest: digestField }),
    workflowRevision: z.number().int().min(1),
    status: executionStatusField,
    waitingFor: waitingForField,
    scheduledBy: scheduledByField,
    cancelRequested: z.boolean(),
    input: z.record(z.string(), anyJson),
    output: anyJson.meta({ description: 'The execution’s output once it succeeded, else null.' }),
    error: executionErrorSchema.nullable(),
    pendingApproval: z.strictObject({ nodeId: identifierField, action: anyJson, actionDigest: digestField }).nullable(),
    attempts: z.array(attemptView),
    nodes: z.array(nodeView).meta({ description: 'In the graph’s node order; only nodes that started.' }),
    tasks: z.array(taskView).meta({ description: 'Every task of the execution’s task nodes, in the order they were scheduled.' }),
    parentExecutionId: uuidField
      .nullable()
      .meta({ description: 'The execution whose `subworkflow` node started this one; null for a top-level execution.' }),
    parent: z
      .strictObject({
        executionId: uuidField,
        nodeId: identifierField,
        depth: z.number().int().min(1),
        rootExecutionId: uuidField.nullable().meta({
          description: 'The top-level execution whose tree this child counts in; null for a child started before trees were bounded.',
        }),
      })
      .nullable()
      .meta({ description: 'The parent execution, its node, how deep this child sits (its children sit one level deeper), and its root.' }),
    children: z.array(childView).meta({ description: 'Child executions its `subworkflow` nodes started, in the order they started.' }),

    timers: z.array(timerView).meta({ description: 'Every durable timer (delay nodes, wait_signal time limits), in the order scheduled.' }),
    signals: z.array(signalView).meta({ description: 'Every signal sent to the execution, in the order received.' }),
    startedAt: timestampField,
    updatedAt: timestampField,
    endedAt: nullableTimestamp,
    position: positionField.meta({ description: 'The last event this view reflects.' }),
    traceId: z
      .string()
      .regex(/^[0-9a-f]{32}$/)
      .nullable()
      .meta({ description: 'The OpenTelemetry trace of the start (W3C trace id), or null when it was not traced.' }),
  })
  .meta({ id: 'ExecutionView' });

/** `toSummaryView`: one row of the list. */
export const executionSummarySchema = z
  .strictObject({
    executionId: uuidField,
    workspaceId: identifierField,
    workflow: z.strictObject({ name: identifierField, revision: z.number().int().min(1) }),
    workflowRevision: z.number().int().min(1),
    status: executionStatusField,
    waitingFor: waitingForField,
    scheduledBy: scheduledByField,
    cancelRequested: z.boolean(),
    attemptCount: z.number().int().min(0),
    startedAt: timestampField,
    updatedAt: timestampField,
    endedAt: nullableTimestamp,
    position: positionField,
  })
  .meta({ id: 'ExecutionSummary' });

export const executionListSchema = z
  .strictObject({
    executions: z.array(executionSummarySchema).meta({ description: 'Newest first.' }),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
    position: positionField
      .nullable()
      .meta({ description: 'The read model’s checkpoint this page reflects (null before the first event).' }),
  })
  .meta({ id: 'ExecutionList' });

export const executionHistorySchema = z
  .strictObject({
    events: z.array(historyEventSchema),
    nextCursor: positionField.nullable().meta({ description: 'Pass as `after` for the next page; null on the last page.' }),
  })
  .meta({ id: 'ExecutionHistory' });

export const cancelReplySchema = z
  .strictObject({ status: executionStatusField, cancelRequested: z.literal(true), position: positionField })
  .meta({ id: 'CancelReply' });

export const approvalReplySchema = z
  .strictObject({ status: executionStatusField, decision: z.enum(['approve', 'reject']), position: positionField })
  .meta({ id: 'ApprovalReply' });

export const signalReplySchema = z
  .strictObject({ signalId: uuidField, position: positionField })
  .meta({ id: 'SignalReply', description: 'With an Idempotency-Key, the same key again answers the first signal’s id.' });

export const redriveReplySchema = z
  .strictObject({ redriveId: uuidField, attemptId: uuidField, attemptNumber: z.number().int().min(1), position: positionField })
  .meta({ id: 'RedriveReply', description: 'The same key again answers exactly this body: a snapshot of the first response.' });

/** `WorkerProtocolHandler.claim`. */
export const claimReplySchema = z
  .strictObject({
    executionId: uuidField,
    workspaceId: identifierField,
    attemptId: uuidField,
    attemptNumber: z.number().int().min(1),
    fencingToken: z.number().int().min(1),
    leaseExpiresAt: timestampField,
    heartbeatIntervalMs: z.number().int().min(1),
    workflow: z.strictObject({
      workflowId: uuidField,
      name: identifierField,
      revision: z.number().int().min(1),
      digest: digestField,
      graph: workflowGraphSchema,
    }),
    input: z.record(z.string(), anyJson),
    completedNodes: z
      .record(z.string(), anyJson)
      .meta({ description: 'Outputs of the nodes that succeeded in earlier attempts, by node id.' }),
    failedNodes: z.record(z.string(), executionErrorSchema).meta({
      description: 'Task nodes whose task failed past its retries earlier in this try, by node id: final and failed, never run again.',
    }),
    completedItems: z.record(z.string(), z.record(z.string(), anyJson)).meta({
      description: 'Outputs of the items of unfinished map nodes that succeeded earlier, by map node id, then item index: never run again.',
    }),
  })
  .meta({ id: 'ClaimReply' });

export const heartbeatReplySchema = z
  .strictObject({ leaseExpiresAt: timestampField, cancelRequested: z.boolean(), position: positionField })
  .meta({ id: 'HeartbeatReply' });

export const completeReplySchema = z.strictObject({ status: executionStatusField, position: positionField }).meta({ id: 'CompleteReply' });
