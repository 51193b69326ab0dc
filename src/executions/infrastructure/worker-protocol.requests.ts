import type { Principal } from '../../auth/authorization.js';
import { parseBody, parseId } from '../../http/validation.js';
import { ClaimAttemptCommand } from '../application/claim-attempt.handler.js';
import { CompleteAttemptCommand } from '../application/complete-attempt.handler.js';
import { HeartbeatAttemptCommand } from '../application/heartbeat-attempt.handler.js';
import { claimBodySchema, completeBodySchema, heartbeatBodySchema } from '../application/request-schemas.js';

/**
 * The worker protocol's requests turned into commands, validated as at the HTTP edge (a
 * malformed id or body is a 400 validation_failed). One place for both ways in: the controller,
 * and the in-process control plane of a worker that shares the api's process (src/app).
 */
export function attemptIdsOf(executionId: unknown, attemptId: unknown): [executionId: string, attemptId: string] {
  return [parseId(executionId, 'executionId'), parseId(attemptId, 'attemptId')];
}

export function claimCommandOf(principal: Principal, executionId: unknown, attemptId: unknown, body: unknown): ClaimAttemptCommand {
  const [execution, attempt] = attemptIdsOf(executionId, attemptId);
  const { workerId } = parseBody(claimBodySchema, body);
  return new ClaimAttemptCommand(principal, execution, attempt, workerId);
}

export function heartbeatCommandOf(principal: Principal, executionId: unknown, attemptId: unknown, body: unknown): HeartbeatAttemptCommand {
  const [execution, attempt] = attemptIdsOf(executionId, attemptId);
  const { workerId, fencingToken } = parseBody(heartbeatBodySchema, body);
  return new HeartbeatAttemptCommand(principal, execution, attempt, workerId, fencingToken);
}

export function completeCommandOf(principal: Principal, executionId: unknown, attemptId: unknown, body: unknown): CompleteAttemptCommand {
  const [execution, attempt] = attemptIdsOf(executionId, attemptId);
  return new CompleteAttemptCommand(principal, execution, attempt, parseBody(completeBodySchema, body));
}
