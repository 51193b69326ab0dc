import { z } from 'zod';
import { maxConcurrentExecutionsSchema, maxExecutionsPerTreeSchema } from '../domain/workspace-settings.events.js';

/** Body of `PUT /v1/workspaces/:workspaceId/settings`: the whole settings, validated at the edge (the controller). */
export const workspaceSettingsBodySchema = z.strictObject({
  maxConcurrentExecutions: maxConcurrentExecutionsSchema.meta({
    description: 'How many executions may run at once: an integer 1-100000, or null for no bound (the default). Required.',
  }),
  maxExecutionsPerTree: maxExecutionsPerTreeSchema.default(null).meta({
    description:
      'How many executions one sub-workflow tree may hold (a top-level execution and every descendant): an integer 1-100000, or null or absent for the deployment’s default (FLOSTRA_MAX_EXECUTIONS_PER_TREE).',
  }),
});

export type WorkspaceSettingsBody = z.output<typeof workspaceSettingsBodySchema>;
