import { z } from 'zod';
import { identifierField, positionField, timestampField } from '../../http/openapi/response-fields.js';
import { maxConcurrentExecutionsSchema, maxExecutionsPerTreeSchema } from '../domain/workspace-settings.events.js';

/** `toSettingsView`: what both settings routes answer. */
export const workspaceSettingsSchema = z
  .strictObject({
    workspaceId: identifierField,
    maxConcurrentExecutions: maxConcurrentExecutionsSchema.meta({
      description: 'How many executions may run at once (from admission to their end); null: no bound.',
    }),
    maxExecutionsPerTree: maxExecutionsPerTreeSchema.meta({
      description: 'How many executions one sub-workflow tree may hold, its top-level execution included; null: the deployment’s default.',
    }),
    updatedAt: timestampField.nullable().meta({ description: 'When the settings were last changed; null: never (the defaults).' }),
    updatedBy: z.string().nullable().meta({ description: 'Who changed them last (a token’s subject).' }),
    position: positionField.nullable().meta({ description: 'The last change’s event; null while the settings were never changed.' }),
  })
  .meta({ id: 'WorkspaceSettings' });
