import { Injectable } from '@nestjs/common';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { sha256OfCanonical } from '../../core/canonical-json.js';
import { ValidationFailedError } from '../../core/errors.js';
import { parseBody } from '../../http/validation.js';
import type { ExecutionState } from '../domain/execution.state.js';
import { ExecutionRunner, positionOf } from './execution-runner.js';
import { approvalBodySchema, cancelBodySchema, idempotencyKeySchema, redriveBodySchema } from './request-schemas.js';

/** Authorization derives from the execution's own workspace (promise 10, docs/architecture.md): 404 when unreadable. */
function authorizeOperator(principal: Principal, state: ExecutionState): void {
  if (state.status !== 'not_started') requireWorkspaceRole(principal, state.workspaceId, 'operator', 'execution not found');
}

@Injectable()
export class OperatorCommandsHandler {
  constructor(private readonly runner: ExecutionRunner) {}

  async cancel(principal: Principal, executionId: string, rawBody: unknown) {
    const body = parseBody(cancelBodySchema, rawBody);
    const outcome = await this.runner.run(executionId, (state) => {
      authorizeOperator(principal, state);
      return { type: 'RequestCancel', data: { reason: body.reason ?? null }, metadata: { now: this.runner.clock.now(), actor: principal.subject } };
    });
    const state = outcome.state;
    if (state.status === 'not_started') throw new Error('unreachable: decider rejects a missing execution');
    return {
      status: state.status,
      cancelRequested: true,
      position: outcome.appended?.position ?? outcome.history[outcome.history.length - 1]!.position,
    };
  }

  async redrive(principal: Principal, executionId: string, idempotencyKey: string | undefined, rawBody: unknown) {
    if (idempotencyKey === undefined) {
      throw new ValidationFailedError('Idempotency-Key header is required for redrive', [{ path: 'Idempotency-Key', message: 'required' }]);
    }
    const key = parseBody(idempotencyKeySchema, idempotencyKey, 'Idempotency-Key');
    const body = parseBody(redriveBodySchema, rawBody);
    const fingerprint = sha256OfCanonical(body);
    const outcome = await this.runner.run(executionId, (state) => {
      authorizeOperator(principal, state);
      return {
        type: 'RequestRedrive',
        data: { redriveId: this.runner.ids.uuid(), idempotencyKey: key, fingerprint, attemptId: this.runner.ids.uuid() },
        metadata: { now: this.runner.clock.now(), actor: principal.subject },
      };
    });
    const state = outcome.state;
    if (state.status === 'not_started') throw new Error('unreachable: decider rejects a missing execution');
    // The answer is the snapshot recorded by the first request, whatever happened since.
    const record = state.redrives[key]!;
    const position =
      outcome.appended?.position ??
      positionOf(outcome.history, (e) => e.type === 'AttemptScheduled' && (e.data as { attemptId: string }).attemptId === record.attemptId);
    return { redriveId: record.redriveId, attemptId: record.attemptId, attemptNumber: record.attemptNumber, position };
  }

  /** Approve or reject the pending approval of a node; bound to the digest of the action shown. */
  async decideApproval(principal: Principal, executionId: string, nodeId: string, rawBody: unknown) {
    const body = parseBody(approvalBodySchema, rawBody);
    const outcome = await this.runner.run(executionId, (state) => {
      authorizeOperator(principal, state);
      return {
        type: 'DecideApproval',
        data: { nodeId, decision: body.decision, actionDigest: body.actionDigest, comment: body.comment ?? null, attemptId: this.runner.ids.uuid() },
        metadata: { now: this.runner.clock.now(), actor: principal.subject },
      };
    });
    const state = outcome.state;
    if (state.status === 'not_started') throw new Error('unreachable: decider rejects a missing execution');
    return {
      status: state.status,
      decision: body.decision,
      position: outcome.appended?.position ?? outcome.history[outcome.history.length - 1]!.position,
    };
  }
}
