import { z } from 'zod';
import { consistencyQueryFields } from '../../projector/read-consistency.js';

/** Query of `GET /v1/workspaces/:workspaceId/audit`, validated at the edge (the controller). */
export const auditQuerySchema = z.strictObject({
  before: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'visible ASCII characters only')
    .optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  ...consistencyQueryFields,
});

export type AuditQuery = z.output<typeof auditQuerySchema>;
