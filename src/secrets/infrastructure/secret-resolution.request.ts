import type { Principal } from '../../auth/authorization.js';
import { attemptIdsOf } from '../../executions/infrastructure/worker-protocol.requests.js';
import { parseBody } from '../../http/validation.js';
import { resolveSecretsBodySchema } from '../application/request-schemas.js';
import { ResolveAttemptSecretsQuery } from '../application/resolve-attempt-secrets.handler.js';

/** A worker's secret resolution as its query, validated as at the HTTP edge (see worker-protocol.requests.ts). */
export function resolveSecretsQueryOf(
  principal: Principal,
  executionId: unknown,
  attemptId: unknown,
  body: unknown,
): ResolveAttemptSecretsQuery {
  const [execution, attempt] = attemptIdsOf(executionId, attemptId);
  const { workerId, fencingToken, names } = parseBody(resolveSecretsBodySchema, body);
  return new ResolveAttemptSecretsQuery(principal, execution, attempt, workerId, fencingToken, names);
}
