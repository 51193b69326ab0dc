import { z } from 'zod';
import { positionField, timestampField, uuidField } from '../http/openapi/response-fields.js';
import { defineRoute, globalRole, json } from '../http/openapi/route-contract.js';
import { nameSchema } from '../http/validation.js';

/** Contracts of ProjectionsAdminController (docs/api.md, "Admin and health"): for the global `system-admin` role only. */

const TAGS = ['Admin'];
const versionField = z.number().int().min(1);
const countField = z.number().int().min(0);

const rebuildProgress = z.strictObject({
  rebuildId: uuidField.nullable(),
  version: versionField,
  definitionVersion: versionField,
  status: z.literal('building'),
  position: positionField.nullable(),
  eventsApplied: countField,
  headEvents: countField.meta({ description: 'Events in the log up to its head, as far as counted.' }),
  headExact: z.boolean().meta({ description: 'False when the count of events behind stopped at its limit.' }),
  progress: z.number().min(0).max(1),
  startedAt: timestampField,
});

/** `ProjectionsAdminService.list`: each read model's live version, lag and rebuild. */
export const projectionsStatusSchema = z
  .strictObject({
    projectorRunsHere: z.boolean().meta({ description: 'Whether this process runs the projector (else `error` is never set here).' }),
    projections: z.array(
      z.strictObject({
        name: z.string(),
        version: versionField,
        definitionVersion: versionField,
        status: z.enum(['live', 'catching_up', 'failing']),
        position: positionField.nullable(),
        eventsApplied: countField,
        updatedAt: timestampField.nullable(),
        lag: z.strictObject({
          events: countField,
          exact: z.boolean().meta({ description: 'False when the count stopped at its limit: at least that many.' }),
          seconds: z.number().min(0).meta({ description: 'Age of the oldest event not applied yet.' }),
        }),
        error: z
          .strictObject({ error: z.string(), at: timestampField })
          .nullable()
          .meta({ description: 'The runner’s last failure in this process, until it recovers.' }),
        rebuild: rebuildProgress.nullable(),
        lastRebuild: z.strictObject({ rebuildId: uuidField, version: versionField, switchedAt: timestampField }).nullable(),
      }),
    ),
  })
  .meta({ id: 'ProjectionsStatus' });

export const rebuildStartedSchema = z.strictObject({ rebuildId: uuidField, version: versionField }).meta({ id: 'RebuildStarted' });

export const listProjectionsContract = defineRoute({
  operationId: 'listProjections',
  summary: 'Read models: positions, lag and rebuilds',
  tags: TAGS,
  access: globalRole('system-admin'),
  responses: { 200: json('Every read model.', projectionsStatusSchema) },
  errors: ['forbidden', 'unavailable'],
});

export const rebuildProjectionContract = defineRoute({
  operationId: 'rebuildProjection',
  summary: 'Rebuild a read model',
  description: 'The new version builds beside the live one and takes over once caught up; follow its progress on the list.',
  tags: TAGS,
  access: globalRole('system-admin'),
  params: z.object({ name: nameSchema }),
  responses: { 202: json('The rebuild started.', rebuildStartedSchema) },
  errors: ['validation_failed', 'forbidden', 'not_found'],
  parameterDescriptions: { name: 'The read model, e.g. `executions` or `timeline`.' },
});
