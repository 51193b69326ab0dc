import { z } from 'zod';
import { anyJson, positionField, timestampField, uuidField, identifierField } from '../../http/openapi/response-fields.js';
import { defineRoute, empty, json, workspaceRole } from '../../http/openapi/route-contract.js';
import { problemSchema } from '../../http/openapi/problem.schema.js';
import {
  pollBodySchema,
  pollParamsSchema,
  taskBatchCompleteBodySchema,
  taskCompleteBodySchema,
  taskHeartbeatBodySchema,
  taskParamsSchema,
} from '../application/request-schemas.js';

/** Contracts of the task protocol (docs/api.md, "Task queues"): for a workspace's `task-worker` grant only. */

const TAGS = ['Task queues'];
const TASK_ID = 'The task, as the poll handed it out (opaque).';

export const polledTaskSchema = z
  .strictObject({
    taskId: z.string().meta({ description: TASK_ID }),
    executionId: uuidField,
    nodeId: identifierField,
    attempt: z.number().int().min(1).meta({ description: 'The try of the task node this task is (1 for the first; retries count on).' }),
    input: anyJson.meta({ description: 'The task’s input: the node’s `input` expression over its input, or the node’s input itself.' }),
    fencingToken: z.number().int().min(1),
    leaseExpiresAt: timestampField,
    heartbeatIntervalMs: z.number().int().min(1).meta({ description: 'A third of the lease: heartbeat at least this often.' }),
  })
  .meta({ id: 'PolledTask' });

export const taskHeartbeatReplySchema = z
  .strictObject({ leaseExpiresAt: timestampField, cancelRequested: z.boolean(), position: positionField })
  .meta({ id: 'TaskHeartbeatReply' });

export const taskCompleteReplySchema = z
  .strictObject({
    taskId: z.string(),
    status: z.enum(['succeeded', 'failed']).meta({ description: 'The task’s status as recorded.' }),
    position: positionField,
    next: polledTaskSchema.nullable().optional().meta({
      description:
        'Only when the request asked for `next`: the next due task of the same queue, claimed for this worker as a poll would, or null when none was due.',
    }),
  })
  .meta({ id: 'TaskCompleteReply' });

export const polledTasksSchema = z
  .strictObject({
    tasks: z
      .array(polledTaskSchema)
      .meta({ description: 'The tasks claimed for this poller, oldest first; empty when none arrived within `waitMs`.' }),
  })
  .meta({ id: 'PolledTasks' });

const taskCompletedSchema = taskCompleteReplySchema.omit({ next: true });

export const taskBatchCompleteReplySchema = z
  .strictObject({
    results: z.array(z.union([taskCompletedSchema, z.strictObject({ taskId: z.string(), problem: problemSchema })])).meta({
      description: 'One per completion, in order: recorded (as the single route answers), or its `problem` (nothing of it recorded).',
    }),
    next: z
      .array(polledTaskSchema)
      .meta({ description: 'Tasks taken for the worker with the completions (`next`), claimed as a poll would.' }),
  })
  .meta({ id: 'TaskBatchCompleteReply' });

export const pollTaskContract = defineRoute({
  operationId: 'pollTask',
  summary: 'Take the next task of a queue',
  description:
    'Long poll: answers the oldest due task of the queue in this workspace as soon as there is one, or 204 after `waitMs` (0 to 30000, default 30000). ' +
    'The task is claimed for this poller with a fencing token and a lease to keep with heartbeats. A queue nobody schedules on simply waits. ' +
    'A poller that disconnects while waiting is handed nothing. ' +
    'With `max` (1 to 100) the reply is the list form `{ tasks }`, always 200: the first task as above, then up to `max - 1` more that are due now.',
  tags: TAGS,
  access: workspaceRole('task-worker', 'path'),
  longPoll: true,
  params: pollParamsSchema,
  body: pollBodySchema,
  responses: {
    200: json('A task, claimed for this poller; with `max`, the list of those claimed.', z.union([polledTaskSchema, polledTasksSchema])),
    204: empty('No task arrived within `waitMs` (without `max`).'),
  },
  errors: ['validation_failed', 'forbidden', 'not_found', 'concurrency_conflict', 'execution_full', 'unavailable'],
  parameterDescriptions: { queue: 'The queue: 1-64 of `a-z 0-9 . _ -`, starting with a letter or digit.' },
});

export const heartbeatTaskContract = defineRoute({
  operationId: 'heartbeatTask',
  summary: 'Extend the lease of a claimed task',
  description:
    'Answers whether the execution was cancelled (`cancelRequested`: stop, and complete nothing). A claim that is no longer current is 409 `stale_attempt`; ' +
    'one whose lease or timeout ran out, 409 `lease_expired`. `progress` (any JSON) is recorded and shown with the task, which keeps its latest FLOSTRA_TASK_PROGRESS_KEPT entries; ' +
    'one larger than FLOSTRA_TASK_PROGRESS_MAX_BYTES is 413 `progress_too_large`, and a heartbeat that would take the history beyond FLOSTRA_EXECUTION_MAX_HISTORY_BYTES is 409 `execution_full`: ' +
    'nothing is recorded and the lease is not extended.',
  tags: TAGS,
  access: workspaceRole('task-worker', 'resource'),
  params: taskParamsSchema,
  body: taskHeartbeatBodySchema,
  responses: { 200: json('The lease was extended, or the task was cancelled.', taskHeartbeatReplySchema) },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'stale_attempt',
    'lease_expired',
    'concurrency_conflict',
    'execution_full',
    'progress_too_large',
    'unavailable',
  ],
  parameterDescriptions: { taskId: TASK_ID },
});

export const completeTaskContract = defineRoute({
  operationId: 'completeTask',
  summary: 'Report how a claimed task ended',
  description:
    '`succeeded` with `output` (the task node’s output), or `failed` with `error` (retried as the node’s retry policy says, unless `retryable` is false). ' +
    'The same completion sent again answers the same. A claim that is no longer current is 409 `stale_attempt`, one past its lease or timeout 409 `lease_expired`: nothing is recorded. ' +
    'With `next: true` the reply also carries the next due task of the same queue, claimed for this worker (`next`, null when none is due: no waiting), so that a busy worker needs one request per task.',
  tags: TAGS,
  access: workspaceRole('task-worker', 'resource'),
  params: taskParamsSchema,
  body: taskCompleteBodySchema,
  responses: { 200: json('The task’s end was recorded.', taskCompleteReplySchema) },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'stale_attempt',
    'lease_expired',
    'output_too_large',
    'concurrency_conflict',
    'execution_full',
    'unavailable',
  ],
  parameterDescriptions: { taskId: TASK_ID },
});

export const completeTasksContract = defineRoute({
  operationId: 'completeTasks',
  summary: 'Report how several claimed tasks ended',
  description:
    'Up to 100 completions, each the body of `completeTask` plus its `taskId`, each decided as that route decides it and answered on its own: ' +
    'recorded, or its problem (`stale_attempt`, `lease_expired`, `not_found`, `output_too_large`…) with nothing of it recorded; one refused completion never fails the others. ' +
    'The completions of one execution go in one append. With `next: n` the reply also carries up to n due tasks of the completed tasks’ queue, claimed for the completing worker ' +
    '(first those the completions scheduled, in the same append; no waiting). A malformed body is 400 and records nothing.',
  tags: TAGS,
  access: workspaceRole('task-worker', 'resource'),
  body: taskBatchCompleteBodySchema,
  responses: { 200: json('Each completion’s verdict, and the tasks taken.', taskBatchCompleteReplySchema) },
  errors: ['validation_failed', 'unavailable'],
});
