import { z } from 'zod';
import { timestampField } from '../../http/openapi/response-fields.js';
import { uuidSchema } from '../../http/validation.js';
import { defineRoute, empty, globalRole, json, workspaceRole } from '../../http/openapi/route-contract.js';
import { secretNameSchema } from '../domain/secret-name.js';
import { putSecretBodySchema, resolveSecretsBodySchema, secretParamsSchema, secretsParamsSchema } from '../application/request-schemas.js';

/** Contracts of the secrets endpoints (docs/api.md, "Secrets"). No response ever carries a value, but the worker's resolution. */

const TAGS = ['Secrets'];
const NAME_DESCRIPTION = 'The secret’s name: 1-128 of `A-Z a-z 0-9 _ . -`.';

/** A secret as every endpoint shows it: its name, version and time, never its value. */
export const secretSummarySchema = z
  .strictObject({ name: secretNameSchema, version: z.number().int().min(1), updatedAt: timestampField })
  .meta({ id: 'SecretSummary' });

export const putSecretContract = defineRoute({
  operationId: 'putSecret',
  summary: 'Store a secret',
  description:
    'Stores `value` (1 byte to 64 KiB of UTF-8 text) encrypted as the next version of the secret; http nodes reference it as `{{secret:NAME}}`. ' +
    'The answer, like every other, never carries the value.',
  tags: TAGS,
  access: workspaceRole('admin', 'path'),
  params: secretParamsSchema,
  body: putSecretBodySchema,
  responses: {
    201: json('The secret did not exist: version 1 was stored.', secretSummarySchema),
    200: json('The secret existed: this is its new version.', secretSummarySchema),
  },
  errors: ['validation_failed', 'forbidden', 'not_found', 'concurrency_conflict', 'unavailable'],
  parameterDescriptions: { name: NAME_DESCRIPTION },
});

export const listSecretsContract = defineRoute({
  operationId: 'listSecrets',
  summary: 'List a workspace’s secrets',
  description: 'Names, versions and times, by name. Read from the secrets’ own stream: always current.',
  tags: TAGS,
  access: workspaceRole('editor', 'path'),
  params: secretsParamsSchema,
  responses: { 200: json('The secrets that exist.', z.strictObject({ items: z.array(secretSummarySchema) })) },
  errors: ['validation_failed', 'forbidden', 'not_found', 'unavailable'],
});

export const deleteSecretContract = defineRoute({
  operationId: 'deleteSecret',
  summary: 'Delete a secret',
  description: 'Executions already running that reference it fail their node with `secret_not_found` when they come to resolve it.',
  tags: TAGS,
  access: workspaceRole('admin', 'path'),
  params: secretParamsSchema,
  responses: { 204: empty('The secret was deleted.') },
  errors: ['validation_failed', 'forbidden', 'not_found', 'concurrency_conflict', 'unavailable'],
  parameterDescriptions: { name: NAME_DESCRIPTION },
});

export const resolveAttemptSecretsContract = defineRoute({
  operationId: 'resolveAttemptSecrets',
  summary: 'Resolve the secrets a claimed attempt needs',
  description:
    'The values of `names`, for the live claim only (the fence of a heartbeat: attempt, worker, fencing token, lease) and only for names the execution’s graph references; ' +
    'a name it does not reference is 403 and nothing is answered. Records nothing. The answer is `Cache-Control: no-store`; use the values for the call and forget them.',
  tags: ['Worker protocol'],
  access: globalRole('worker'),
  params: z.object({ executionId: uuidSchema, attemptId: uuidSchema }),
  body: resolveSecretsBodySchema,
  responses: {
    200: json('The values, by name.', z.strictObject({ values: z.record(secretNameSchema, z.string()) }).meta({ id: 'ResolvedSecrets' })),
  },
  errors: ['validation_failed', 'forbidden', 'not_found', 'stale_attempt', 'lease_expired', 'secret_not_found', 'unavailable'],
});
