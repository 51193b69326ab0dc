import { z } from 'zod';
import { consistencyQueryFields } from '../../projector/read-consistency.js';

/** Query of `GET /v1/workspaces/:workspaceId/workflows/:name`: a revision, else the latest. */
export const workflowRevisionQuerySchema = z.strictObject({ revision: z.coerce.number().int().min(1).optional() });

/** Query of `GET /v1/workspaces/:workspaceId/workflows`: read-your-writes only. */
export const workflowListQuerySchema = z.strictObject({ ...consistencyQueryFields });
