import { z } from 'zod';
import { executionErrorBodySchema } from '../../executions/application/request-schemas.js';
import { taskQueueSchema } from '../../workflows/domain/node-config.schema.js';
import { workspaceIdSchema } from '../../auth/principal.js';

/** Paths and bodies of the task protocol (docs/api.md, "Task queues"), validated at the edge. */

/** The longest a poll waits for a task before answering 204. */
export const MAX_POLL_WAIT_MS = 30_000;

const workerId = z.string().min(1).max(200);

export const pollParamsSchema = z.object({ workspaceId: workspaceIdSchema, queue: taskQueueSchema });

/** Opaque to clients: `<executionId>.<nodeId>.<n>`, as the poll handed it out. */
export const taskIdSchema = z.string().min(1).max(200);

export const taskParamsSchema = z.object({ taskId: taskIdSchema });

export const pollBodySchema = z.strictObject({
  workerId,
  waitMs: z.number().int().min(0).max(MAX_POLL_WAIT_MS).default(MAX_POLL_WAIT_MS),
});

export const taskHeartbeatBodySchema = z.strictObject({
  workerId,
  fencingToken: z.number().int().min(1),
  progress: z.unknown().optional(),
});

export const taskCompleteBodySchema = z
  .strictObject({
    workerId,
    fencingToken: z.number().int().min(1),
    outcome: z.enum(['succeeded', 'failed']),
    output: z.unknown().optional(),
    error: executionErrorBodySchema.optional(),
    /** Also take the next due task of the same queue for this worker, without waiting (docs/api.md, "Task queues"). */
    next: z.boolean().optional(),
  })
  .refine((b) => b.outcome !== 'failed' || b.error !== undefined, { message: 'error is required when outcome is failed', path: ['error'] })
  .refine((b) => b.outcome !== 'succeeded' || b.error === undefined, {
    message: 'error is only for outcome failed',
    path: ['error'],
  })
  .refine((b) => b.outcome !== 'failed' || b.output === undefined, { message: 'output is only for outcome succeeded', path: ['output'] });

export type PollBody = z.output<typeof pollBodySchema>;
export type TaskHeartbeatBody = z.output<typeof taskHeartbeatBodySchema>;
export type TaskCompleteBody = z.output<typeof taskCompleteBodySchema>;
