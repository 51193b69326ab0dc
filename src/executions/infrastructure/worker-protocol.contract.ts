import { z } from 'zod';
import { defineRoute, globalRole, json } from '../../http/openapi/route-contract.js';
import { uuidSchema } from '../../http/validation.js';
import { workflowGraphDocumentation } from '../../workflows/infrastructure/workflows.contract.js';
import { claimBodySchema, completeBodySchema, heartbeatBodySchema } from '../application/request-schemas.js';
import { claimReplySchema, completeReplySchema, heartbeatReplySchema } from './execution.responses.js';

/** Contracts of WorkerProtocolController (docs/api.md, "Worker protocol"): for the global `worker` role only. */

const TAGS = ['Worker protocol'];
const attemptParams = z.object({ executionId: uuidSchema, attemptId: uuidSchema });

export const claimAttemptContract = defineRoute({
  operationId: 'claimAttempt',
  summary: 'Claim an attempt',
  description:
    'Only the winner runs the attempt: it gets a fencing token and a lease to keep with heartbeats. The same worker asking again gets the same claim; ' +
    'anyone else, or an attempt that is not current, queued and due, is 409 `stale_attempt`.',
  tags: TAGS,
  access: globalRole('worker'),
  params: attemptParams,
  body: claimBodySchema,
  responses: { 200: json('The claim: what to run, and the lease.', claimReplySchema) },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'stale_attempt',
    'lease_expired',
    'concurrency_conflict',
    'execution_full',
    'unavailable',
  ],
  ...workflowGraphDocumentation,
});

export const heartbeatContract = defineRoute({
  operationId: 'heartbeatAttempt',
  summary: 'Extend the lease of a claimed attempt',
  description:
    'Answers whether cancellation was requested. A claim that is no longer current is 409 `stale_attempt`; one whose lease ran out, 409 `lease_expired`.',
  tags: TAGS,
  access: globalRole('worker'),
  params: attemptParams,
  body: heartbeatBodySchema,
  responses: { 200: json('The lease was extended.', heartbeatReplySchema) },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'stale_attempt',
    'lease_expired',
    'concurrency_conflict',
    'execution_full',
    'unavailable',
  ],
});

export const completeAttemptContract = defineRoute({
  operationId: 'completeAttempt',
  summary: 'Report how a claimed attempt ended',
  description:
    '`succeeded` (with `output`), `failed` (with `error`; retried as the workflow’s policy says), `cancelled`, or `suspended` at an approval node (with `approval`).',
  tags: TAGS,
  access: globalRole('worker'),
  params: attemptParams,
  body: completeBodySchema,
  responses: { 200: json('The outcome was recorded.', completeReplySchema) },
  errors: [
    'validation_failed',
    'forbidden',
    'not_found',
    'invalid_state',
    'stale_attempt',
    'lease_expired',
    'concurrency_conflict',
    'execution_full',
    'unavailable',
  ],
});
