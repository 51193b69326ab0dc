import { z } from 'zod';

/** Bodies and headers of the execution endpoints (docs/api.md, "Executions" and "Worker protocol"). */
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
    outcome: z.enum(['succeeded', 'failed', 'cancelled', 'suspended']),
    output: z.unknown().optional(),
    error: executionErrorBodySchema.optional(),
    approval: z.strictObject({ nodeId: z.string().min(1).max(64), action: z.unknown() }).optional(),
  })
  .refine((b) => b.outcome !== 'failed' || b.error !== undefined, { message: 'error is required when outcome is failed', path: ['error'] })
  .refine((b) => b.outcome !== 'suspended' || b.approval !== undefined, { message: 'approval is required when outcome is suspended', path: ['approval'] });

export const approvalBodySchema = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  actionDigest: z.string().regex(/^[0-9a-f]{64}$/, 'expected the 64-hex sha256 digest shown with the pending approval'),
  comment: z.string().max(2048).optional(),
});

export const historyQuerySchema = z.strictObject({
  after: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
