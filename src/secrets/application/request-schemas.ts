import { z } from 'zod';
import { nameSchema } from '../../http/validation.js';
import { secretNameSchema, secretValueSchema } from '../domain/secret-name.js';

/** Bodies and paths of the secrets endpoints, validated at the edge (the controllers). */

export const secretsParamsSchema = z.object({ workspaceId: nameSchema });

export const secretParamsSchema = z.object({ workspaceId: nameSchema, name: secretNameSchema });

export const putSecretBodySchema = z.strictObject({ value: secretValueSchema });

/** Most names one resolution may ask for (a graph references at most this many in practice). */
export const MAX_RESOLVED_NAMES = 500;

export const resolveSecretsBodySchema = z.strictObject({
  workerId: z.string().min(1).max(200),
  fencingToken: z.number().int().min(1),
  names: z.array(secretNameSchema).min(1).max(MAX_RESOLVED_NAMES),
});

export type ResolveSecretsBody = z.output<typeof resolveSecretsBodySchema>;
