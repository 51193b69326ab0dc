import { z } from 'zod';
import { maxConcurrentExecutionsSchema } from '../domain/workspace-settings.events.js';

/** Body of `PUT /v1/workspaces/:workspaceId/settings`: the whole settings, validated at the edge (the controller). */
export const workspaceSettingsBodySchema = z.strictObject({
  maxConcurrentExecutions: maxConcurrentExecutionsSchema.meta({
    description: 'How many executions may run at once: an integer 1-100000, or null for no bound (the default). Required.',
  }),
});

export type WorkspaceSettingsBody = z.output<typeof workspaceSettingsBodySchema>;
