import { z } from 'zod';
import { defineRoute, json, workspaceRole } from '../../http/openapi/route-contract.js';
import { nameSchema, uuidSchema } from '../../http/validation.js';
import {
  approvalBodySchema,
  cancelBodySchema,
  getExecutionQuerySchema,
  historyQuerySchema,
  idempotencyKeySchema,
  listExecutionsQuerySchema,
  redriveBodySchema,
  signalBodySchema,
  startExecutionBodySchema,
} from '../application/request-schemas.js';
import { signalNameSchema } from '../../workflows/domain/node-config.schema.js';
import {
  approvalReplySchema,
  cancelReplySchema,
  executionHistorySchema,
  executionListSchema,
  executionViewSchema,
  redriveReplySchema,
  signalReplySchema,
  startedExecutionSchema,
} from './execution.responses.js';

/** Contracts of ExecutionsController (docs/api.md, "Executions"). */

const TAGS = ['Executions'];
const executionParams = z.object({ executionId: uuidSchema });

/** Not checked by the query's zod rule: a value that is not a position of this store is a 400 all the same. */
const minPositionHeader = z.object({ 'X-Flostra-Min-Position': z.string().optional() });

const READ_CONSISTENCY =
  'Reads are read-your-writes: the query first waits (bounded) until the read model reflects every write acknowledged before it arrived; ' +
  '`minPosition` (or X-Flostra-Min-Position) waits only for that position, `consistency=eventual` does not wait. ' +
  'A read model that does not catch up in time answers 503 `unavailable`, never stale data.';

export const startExecutionContract = defineRoute({
  operationId: 'startExecution',
  summary: 'Start an execution of a workflow',
  description:
    'Starts the latest revision of the workflow, or `revision`. With an Idempotency-Key, the same key and body again answer 200 with the same body, ' +
    'and the same key with another body is 409 `idempotency_conflict`. A graph that references secrets the workspace lacks is 409 `secret_not_found` (`missing` names them).',
  tags: TAGS,
  access: workspaceRole('operator', 'path'),
  params: z.object({ workspaceId: nameSchema, name: nameSchema }),
  headers: z.object({ 'Idempotency-Key': idempotencyKeySchema.optional() }),
  body: startExecutionBodySchema,
  responses: {
    201: json('The execution was started; its first attempt is queued.', startedExecutionSchema),
    200: json('A replay: this Idempotency-Key and body started this execution before.', startedExecutionSchema),
  },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'idempotency_conflict',
    'secret_not_found',
    'concurrency_conflict',
    'unavailable',
  ],
});

export const listExecutionsContract = defineRoute({
  operationId: 'listExecutions',
  summary: 'List a workspace’s executions',
  description: `Newest first, in pages; filter by status (comma-separated) and workflow. ${READ_CONSISTENCY}`,
  tags: TAGS,
  access: workspaceRole('viewer', 'path'),
  params: z.object({ workspaceId: nameSchema }),
  query: listExecutionsQuerySchema,
  headers: minPositionHeader,
  responses: { 200: json('One page of executions.', executionListSchema) },
  errors: ['validation_failed', 'not_found', 'unavailable'],
  parameterDescriptions: { status: 'Comma-separated statuses, e.g. `failed,timed_out`.' },
});

export const getExecutionContract = defineRoute({
  operationId: 'getExecution',
  summary: 'Get an execution',
  description:
    'Status, workflow revision, attempts, nodes, pending approval and timestamps, from the read model. ' +
    'A value (input, output, progress, signal payload, approval action) larger than FLOSTRA_EXECUTION_VIEW_VALUE_MAX_BYTES shows as `{ "$omitted": { "bytes": n } }`: ' +
    `the whole value is in the execution’s history. ${READ_CONSISTENCY}`,
  tags: TAGS,
  access: workspaceRole('viewer', 'resource'),
  params: executionParams,
  query: getExecutionQuerySchema,
  headers: minPositionHeader,
  responses: { 200: json('The execution.', executionViewSchema) },
  errors: ['validation_failed', 'not_found', 'unavailable'],
});

export const executionHistoryContract = defineRoute({
  operationId: 'getExecutionHistory',
  summary: 'Read an execution’s events',
  description:
    'The execution’s events in log order, after `after` (an event’s position), in pages: `limit` events at most, and none more once their data pass ' +
    `FLOSTRA_HISTORY_PAGE_MAX_BYTES (the first always comes); \`nextCursor\` goes on. ${READ_CONSISTENCY}`,
  tags: TAGS,
  access: workspaceRole('viewer', 'resource'),
  params: executionParams,
  query: historyQuerySchema,
  headers: minPositionHeader,
  responses: { 200: json('One page of events.', executionHistorySchema) },
  errors: ['validation_failed', 'not_found', 'unavailable'],
});

export const cancelExecutionContract = defineRoute({
  operationId: 'cancelExecution',
  summary: 'Request cancellation',
  description:
    'The running attempt is told to stop (its heartbeat answers `cancelRequested`). A second cancel is a no-op 202; cancelling a finished execution is 409 `invalid_state`.',
  tags: TAGS,
  access: workspaceRole('operator', 'resource'),
  params: executionParams,
  body: cancelBodySchema,
  responses: { 202: json('Cancellation was requested.', cancelReplySchema) },
  errors: ['validation_failed', 'forbidden', 'not_found', 'invalid_state', 'concurrency_conflict', 'unavailable'],
});

export const decideApprovalContract = defineRoute({
  operationId: 'decideApproval',
  summary: 'Approve or reject a pending approval',
  description:
    'Decides the approval node the execution waits for. `actionDigest` binds the decision to the action shown: a digest that no longer matches is 409 `approval_mismatch`. ' +
    'When the node’s `config.approvers` names subjects, only they may decide: anyone else is 403 `forbidden`, and nothing is written.',
  tags: TAGS,
  access: workspaceRole('operator', 'resource'),
  params: executionParams.extend({ nodeId: nameSchema }),
  body: approvalBodySchema,
  responses: { 202: json('The decision was recorded.', approvalReplySchema) },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'invalid_state',
    'approval_mismatch',
    'concurrency_conflict',
    'execution_full',
    'unavailable',
  ],
});

export const redriveExecutionContract = defineRoute({
  operationId: 'redriveExecution',
  summary: 'Redrive a failed, timed-out or cancelled execution',
  description: 'Schedules a new attempt. The Idempotency-Key is required: the same key again answers the first response’s snapshot.',
  tags: TAGS,
  access: workspaceRole('operator', 'resource'),
  params: executionParams,
  headers: z.object({ 'Idempotency-Key': idempotencyKeySchema }),
  body: redriveBodySchema,
  responses: { 202: json('A new attempt was scheduled.', redriveReplySchema) },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'idempotency_conflict',
    'invalid_state',
    'concurrency_conflict',
    'execution_full',
    'unavailable',
  ],
});

export const sendSignalContract = defineRoute({
  operationId: 'sendSignal',
  summary: 'Send a signal to an execution',
  description:
    'Records the signal on the execution’s stream. The `wait_signal` node of that name that has waited longest takes it (its output is `payload`, null when absent) ' +
    'and the execution goes on; with none waiting, the signal is kept for the first node that asks, each signal taken by one node at most. ' +
    'An Idempotency-Key makes a retry safe: the same key with the same name and payload answers the first `signalId`; with another payload, 409 `idempotency_conflict`. ' +
    'An execution that has ended answers 409 `invalid_state`. A signal that would be kept is bounded: beyond FLOSTRA_EXECUTION_MAX_KEPT_SIGNALS kept signals it is 409 `too_many_signals`, ' +
    'beyond FLOSTRA_EXECUTION_MAX_KEPT_SIGNAL_BYTES of kept payloads 413 `signals_too_large`; one that would take the history beyond FLOSTRA_EXECUTION_MAX_HISTORY_BYTES is 409 `execution_full`. ' +
    'Each records nothing.',
  tags: TAGS,
  access: workspaceRole('operator', 'resource'),
  params: executionParams.extend({ name: signalNameSchema }),
  headers: z.object({ 'Idempotency-Key': idempotencyKeySchema.optional() }),
  body: signalBodySchema,
  responses: { 202: json('The signal was recorded.', signalReplySchema) },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'idempotency_conflict',
    'invalid_state',
    'concurrency_conflict',
    'too_many_signals',
    'execution_full',
    'signals_too_large',
    'unavailable',
  ],
});
