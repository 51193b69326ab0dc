import { z } from 'zod';

/** Bodies and headers of the execution endpoints (API.md "Executions", "Worker protocol"). */
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
    outcome: z.enum(['succeeded', 'failed', 'cancelled']),
    output: z.unknown().optional(),
    error: executionErrorBodySchema.optional(),
  })
  .refine((b) => b.outcome !== 'failed' || b.error !== undefined, { message: 'error is required when outcome is failed', path: ['error'] });

export const historyQuerySchema = z.strictObject({
  after: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
