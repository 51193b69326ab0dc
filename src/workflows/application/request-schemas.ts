import { z } from 'zod';

/** Query of `GET /v1/workspaces/:workspaceId/workflows/:name`: a revision, else the latest. */
export const workflowRevisionQuerySchema = z.strictObject({ revision: z.coerce.number().int().min(1).optional() });
