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

/** The most tasks one request takes (a poll's `max`, a batch completion's `next`) and the most completions one batch carries. */
export const MAX_TASKS_PER_REQUEST = 100;

export const pollBodySchema = z.strictObject({
  workerId,
  waitMs: z.number().int().min(0).max(MAX_POLL_WAIT_MS).default(MAX_POLL_WAIT_MS),
  /** Take up to this many tasks; given, the reply is the list form `{ tasks: [...] }` (docs/api.md, "Task queues"). */
  max: z.number().int().min(1).max(MAX_TASKS_PER_REQUEST).optional(),
});

export const taskHeartbeatBodySchema = z.strictObject({
  workerId,
  fencingToken: z.number().int().min(1),
  progress: z.unknown().optional(),
});

const completionFields = {
  workerId,
  fencingToken: z.number().int().min(1),
  outcome: z.enum(['succeeded', 'failed']),
  output: z.unknown().optional(),
  error: executionErrorBodySchema.optional(),
};

type CompletionFields = { outcome: 'succeeded' | 'failed'; output?: unknown; error?: unknown };

/** An outcome goes with its own field only: `error` with `failed`, `output` with `succeeded`. */
function withOutcomeRules<T extends z.ZodType<CompletionFields>>(schema: T) {
  return schema
    .refine((b) => b.outcome !== 'failed' || b.error !== undefined, {
      message: 'error is required when outcome is failed',
      path: ['error'],
    })
    .refine((b) => b.outcome !== 'succeeded' || b.error === undefined, { message: 'error is only for outcome failed', path: ['error'] })
    .refine((b) => b.outcome !== 'failed' || b.output === undefined, { message: 'output is only for outcome succeeded', path: ['output'] });
}

export const taskCompleteBodySchema = withOutcomeRules(
  z.strictObject({
    ...completionFields,
    /** Also take the next due task of the same queue for this worker, without waiting (docs/api.md, "Task queues"). */
    next: z.boolean().optional(),
  }),
);

/** One completion of a batch: the single route's body (without `next`) and the task it is about. */
export const taskCompletionItemSchema = withOutcomeRules(z.strictObject({ taskId: taskIdSchema, ...completionFields }));

export const taskBatchCompleteBodySchema = z.strictObject({
  completions: z.array(taskCompletionItemSchema).min(1).max(MAX_TASKS_PER_REQUEST),
  /** Also take up to this many due tasks of the completed tasks' queue, without waiting. */
  next: z.number().int().min(0).max(MAX_TASKS_PER_REQUEST).default(0),
});

export type PollBody = z.output<typeof pollBodySchema>;
export type TaskHeartbeatBody = z.output<typeof taskHeartbeatBodySchema>;
export type TaskCompleteBody = z.output<typeof taskCompleteBodySchema>;
export type TaskCompletionItem = z.output<typeof taskCompletionItemSchema>;
export type TaskBatchCompleteBody = z.output<typeof taskBatchCompleteBodySchema>;
