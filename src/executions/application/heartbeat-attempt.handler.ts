import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireGlobalRole } from '../../auth/authorization.js';
import { workerActor } from '../../core/actors.js';
import { ExecutionStreams, lastPosition } from './execution-streams.js';
import { runningAttempt } from './running-attempt.js';

export interface HeartbeatAttemptResult {
  leaseExpiresAt: string;
  cancelRequested: boolean;
  position: string;
}

export class HeartbeatAttemptCommand extends Command<HeartbeatAttemptResult> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly attemptId: string,
    readonly workerId: string,
    readonly fencingToken: number,
  ) {
    super();
  }
}

/** Extends the lease of the current claim (promises 3 and 4); the reply says whether to cancel. */
@CommandHandler(HeartbeatAttemptCommand)
export class HeartbeatAttemptHandler implements ICommandHandler<HeartbeatAttemptCommand> {
  constructor(private readonly executions: ExecutionStreams) {}

  async execute({ principal, executionId, attemptId, workerId, fencingToken }: HeartbeatAttemptCommand): Promise<HeartbeatAttemptResult> {
    requireGlobalRole(principal, 'worker');
    const outcome = await this.executions.handle(executionId, {
      type: 'Heartbeat',
      data: { attemptId, workerId, fencingToken },
      metadata: { now: this.executions.clock.now(), actor: workerActor(workerId) },
    });
    const { state, attempt } = runningAttempt(outcome, attemptId);
    return { leaseExpiresAt: attempt.leaseExpiresAt, cancelRequested: state.cancelRequest !== null, position: lastPosition(outcome) };
  }
}
