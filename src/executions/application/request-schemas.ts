import { z } from 'zod';
import { nameSchema } from '../../http/validation.js';
import { consistencyQueryFields } from '../../projector/read-consistency.js';
import type { StartedExecution } from '../domain/execution.state.js';

/** Bodies, queries and headers of the execution endpoints, validated at the edge (the controllers). */
export const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'visible ASCII characters only');

export const startExecutionBodySchema = z.strictObject({
  input: z.record(z.string(), z.unknown()).optional(),
  revision: z.number().int().min(1).optional(),
});

export const cancelBodySchema = z.strictObject({ reason: z.string().max(1024).optional() });

export const redriveBodySchema = z.strictObject({ reason: z.string().max(1024).optional() });

/** `POST /v1/executions/:executionId/signals/:name`: the payload becomes the output of the node that takes it (null when absent). */
export const signalBodySchema = z.strictObject({ payload: z.json().optional() });

const workerId = z.string().min(1).max(200);

export const claimBodySchema = z.strictObject({ workerId });

export const heartbeatBodySchema = z.strictObject({ workerId, fencingToken: z.number().int().min(1) });

export const executionErrorBodySchema = z.strictObject({
  code: z.string().min(1).max(128),
  message: z.string().max(4096),
  retryable: z.boolean().optional(),
});

export const completeBodySchema = z
  .strictObject({
    workerId,
    fencingToken: z.number().int().min(1),
    outcome: z.enum(['succeeded', 'failed', 'cancelled', 'suspended']),
    output: z.unknown().optional(),
    error: executionErrorBodySchema.optional(),
    approval: z.strictObject({ nodeId: z.string().min(1).max(64), action: z.unknown() }).optional(),
    tasks: z.array(z.string().min(1).max(64)).max(1000).optional(),
    /** For outcome `suspended`: the `delay` nodes waiting for their timers, the `wait_signal` nodes for a signal. */
    timers: z.array(z.string().min(1).max(64)).max(1000).optional(),
    signals: z.array(z.string().min(1).max(64)).max(1000).optional(),
  })
  .refine((b) => b.outcome !== 'failed' || b.error !== undefined, { message: 'error is required when outcome is failed', path: ['error'] })
  .refine(
    (b) =>
      b.outcome !== 'suspended' ||
      b.approval !== undefined ||
      (b.tasks?.length ?? 0) + (b.timers?.length ?? 0) + (b.signals?.length ?? 0) > 0,
    {
      message: 'approval, tasks, timers or signals is required when outcome is suspended',
      path: ['approval'],
    },
  );

export const approvalBodySchema = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  actionDigest: z.string().regex(/^[0-9a-f]{64}$/, 'expected the 64-hex sha256 digest shown with the pending approval'),
  comment: z.string().max(2048).optional(),
});

/** Every status an execution can be in, as `GET /v1/executions/:executionId` shows it. */
export const EXECUTION_STATUSES = [
  'queued',
  'running',
  'awaiting_approval',
  'waiting',
  'succeeded',
  'failed',
  'timed_out',
  'cancelled',
] as const satisfies readonly StartedExecution['status'][];

/** Query of `GET /v1/executions/:executionId`. */
export const getExecutionQuerySchema = z.strictObject(consistencyQueryFields);

/** Query of `GET /v1/executions/:executionId/history`. */
export const historyQuerySchema = z.strictObject({
  after: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  ...consistencyQueryFields,
});

/** Query of `GET /v1/workspaces/:workspaceId/executions`. */
export const listExecutionsQuerySchema = z.strictObject({
  status: z
    .string()
    .transform((raw) => raw.split(',').map((s) => s.trim()))
    .pipe(z.array(z.enum(EXECUTION_STATUSES)).min(1))
    .optional(),
  workflow: nameSchema.optional(),
  cursor: z.string().min(1).max(400).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  ...consistencyQueryFields,
});

export type StartExecutionBody = z.output<typeof startExecutionBodySchema>;
export type RedriveBody = z.output<typeof redriveBodySchema>;
export type ApprovalBody = z.output<typeof approvalBodySchema>;
export type CompleteBody = z.output<typeof completeBodySchema>;
export type HistoryQuery = z.output<typeof historyQuerySchema>;
export type ListExecutionsQuery = z.output<typeof listExecutionsQuerySchema>;
