import { Injectable } from '@nestjs/common';
import { type Principal, requireGlobalRole } from '../../auth/authorization.js';
import { NotFoundError } from '../../core/errors.js';
import { parseBody } from '../../http/validation.js';
import { type StartedExecution, currentAttempt } from '../domain/execution.state.js';
import { ExecutionRunner, type ExecutionOutcome } from './execution-runner.js';
import { claimBodySchema, completeBodySchema, heartbeatBodySchema } from './request-schemas.js';

/** The worker's synchronous protocol: claim, heartbeat, complete (docs/api.md, "Worker protocol"). */
@Injectable()
export class WorkerProtocolHandler {
  constructor(private readonly runner: ExecutionRunner) {}

  async claim(principal: Principal, executionId: string, attemptId: string, rawBody: unknown) {
    requireGlobalRole(principal, 'worker');
    const { workerId } = parseBody(claimBodySchema, rawBody);
    const outcome = await this.runner.run(executionId, {
      type: 'ClaimAttempt',
      data: { attemptId, workerId },
      metadata: { now: this.runner.clock.now(), actor: workerId },
    });
    const state = started(outcome);
    const attempt = currentAttempt(state)!;
    const leaseMs = state.workflow.graph.timeouts.leaseMs;
    const completedNodes: Record<string, unknown> = {};
    for (const node of Object.values(state.nodes)) if (node.status === 'succeeded') completedNodes[node.nodeId] = node.output;
    return {
      executionId,
      workspaceId: state.workspaceId,
      attemptId,
      attemptNumber: attempt.attemptNumber,
      fencingToken: attempt.fencingToken!,
      leaseExpiresAt: attempt.leaseExpiresAt!,
      heartbeatIntervalMs: heartbeatInterval(leaseMs),
      workflow: state.workflow,
      input: state.input,
      completedNodes,
    };
  }

  async heartbeat(principal: Principal, executionId: string, attemptId: string, rawBody: unknown) {
    requireGlobalRole(principal, 'worker');
    const body = parseBody(heartbeatBodySchema, rawBody);
    const outcome = await this.runner.run(executionId, {
      type: 'Heartbeat',
      data: { attemptId, ...body },
      metadata: { now: this.runner.clock.now(), actor: body.workerId },
    });
    const state = started(outcome);
    return {
      leaseExpiresAt: currentAttempt(state)!.leaseExpiresAt!,
      cancelRequested: state.cancelRequest !== null,
      position: outcome.appended!.position,
    };
  }

  async complete(principal: Principal, executionId: string, attemptId: string, rawBody: unknown) {
    requireGlobalRole(principal, 'worker');
    const body = parseBody(completeBodySchema, rawBody);
    const outcome = await this.runner.run(executionId, {
      type: 'CompleteAttempt',
      data: { attemptId, ...body, nextAttemptId: this.runner.ids.uuid(), jitter: Math.random() },
      metadata: { now: this.runner.clock.now(), actor: body.workerId },
    });
    const state = started(outcome);
    return { status: state.status, position: outcome.appended?.position ?? outcome.history[outcome.history.length - 1]!.position };
  }
}

/** Three heartbeats fit in one lease, so one lost heartbeat does not cost the lease. */
export function heartbeatInterval(leaseMs: number): number {
  return Math.max(100, Math.floor(leaseMs / 3));
}

function started(outcome: ExecutionOutcome): StartedExecution {
  if (outcome.state.status === 'not_started') throw new NotFoundError('execution not found');
  return outcome.state;
}
