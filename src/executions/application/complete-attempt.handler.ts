import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireGlobalRole } from '../../auth/authorization.js';
import { workerActor } from '../../core/actors.js';
import { NotFoundError } from '../../core/errors.js';
import type { ExecutionStatus } from '../domain/execution.state.js';
import { ExecutionStreams, lastPosition } from './execution-streams.js';
import type { CompleteBody } from './request-schemas.js';

export interface CompleteAttemptResult {
  status: ExecutionStatus;
  position: string;
}

export class CompleteAttemptCommand extends Command<CompleteAttemptResult> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly attemptId: string,
    readonly body: CompleteBody,
  ) {
    super();
  }
}

/** Ends the current claim's attempt with its outcome (fenced, promise 3 in docs/architecture.md); a redelivery is a replay. */
@CommandHandler(CompleteAttemptCommand)
export class CompleteAttemptHandler implements ICommandHandler<CompleteAttemptCommand> {
  constructor(private readonly executions: ExecutionStreams) {}

  async execute({ principal, executionId, attemptId, body }: CompleteAttemptCommand): Promise<CompleteAttemptResult> {
    requireGlobalRole(principal, 'worker');
    const outcome = await this.executions.handle(executionId, {
      type: 'CompleteAttempt',
      data: { attemptId, ...body, nextAttemptId: this.executions.ids.uuid(), jitter: Math.random() },
      metadata: { now: this.executions.clock.now(), actor: workerActor(body.workerId) },
    });
    if (outcome.state.status === 'not_started') throw new NotFoundError('execution not found');
    return { status: outcome.state.status, position: lastPosition(outcome) };
  }
}
