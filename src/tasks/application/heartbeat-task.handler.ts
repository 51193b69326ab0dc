import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { workerActor } from '../../core/actors.js';
import { ExecutionStreams, lastPosition } from '../../executions/application/execution-streams.js';
import type { TaskHeartbeatBody } from './request-schemas.js';
import { authorizeTaskWorker, executionOfTask, taskIn } from './task-protocol.js';

export interface HeartbeatTaskResult {
  leaseExpiresAt: string;
  cancelRequested: boolean;
  position: string;
}

export class HeartbeatTaskCommand extends Command<HeartbeatTaskResult> {
  constructor(
    readonly principal: Principal,
    readonly taskId: string,
    readonly body: TaskHeartbeatBody,
  ) {
    super();
  }
}

/**
 * Extends the lease of the current claim of a task; the reply says whether its execution was
 * cancelled (then the task was too: stop, and complete nothing). The decider bounds the progress
 * (`progress_too_large`) and keeps the task's latest entries only.
 */
@CommandHandler(HeartbeatTaskCommand)
export class HeartbeatTaskHandler implements ICommandHandler<HeartbeatTaskCommand> {
  constructor(private readonly executions: ExecutionStreams) {}

  async execute({ principal, taskId, body }: HeartbeatTaskCommand): Promise<HeartbeatTaskResult> {
    const outcome = await this.executions.handle(executionOfTask(taskId), (state) => {
      authorizeTaskWorker(principal, state);
      return {
        type: 'HeartbeatTask',
        data: {
          taskId,
          workerId: body.workerId,
          fencingToken: body.fencingToken,
          ...(body.progress !== undefined ? { progress: body.progress } : {}),
        },
        metadata: { now: this.executions.clock.now(), actor: workerActor(body.workerId) },
      };
    });
    const task = taskIn(outcome.state, taskId);
    const cancelled = task.status === 'cancelled' || (outcome.state.status !== 'not_started' && outcome.state.cancelRequest !== null);
    return { leaseExpiresAt: task.leaseExpiresAt!, cancelRequested: cancelled, position: lastPosition(outcome) };
  }
}
