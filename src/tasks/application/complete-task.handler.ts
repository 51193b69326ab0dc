import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { workerActor } from '../../core/actors.js';
import { ExecutionStreams, lastPosition } from '../../executions/application/execution-streams.js';
import type { TaskStatus } from '../../executions/domain/execution.state.js';
import type { TaskCompleteBody } from './request-schemas.js';
import { TaskBoard } from './task-board.js';
import { authorizeTaskWorker, executionOfTask, requireWithinOutputLimit, taskIn } from './task-protocol.js';

export interface CompleteTaskResult {
  taskId: string;
  status: TaskStatus;
  position: string;
  /** Where the task was queued: where a `next` task is taken from. */
  workspaceId: string;
  queue: string;
}

export class CompleteTaskCommand extends Command<CompleteTaskResult> {
  constructor(
    readonly principal: Principal,
    readonly taskId: string,
    readonly body: TaskCompleteBody,
  ) {
    super();
  }
}

/**
 * Records how the current claim of a task ended (fenced, like an attempt's completion): the task
 * node's result, or its next try by the node's retry policy; a suspended execution resumes. The
 * same completion sent again is a replay. Tasks the completion scheduled (its node's successors,
 * or its retry) go on this process's board at once, for the next poll here to take.
 */
@CommandHandler(CompleteTaskCommand)
export class CompleteTaskHandler implements ICommandHandler<CompleteTaskCommand> {
  constructor(
    private readonly executions: ExecutionStreams,
    private readonly board: TaskBoard,
  ) {}

  async execute({ principal, taskId, body }: CompleteTaskCommand): Promise<CompleteTaskResult> {
    requireWithinOutputLimit('output', body.output);
    const outcome = await this.executions.handle(executionOfTask(taskId), (state) => {
      authorizeTaskWorker(principal, state);
      return {
        type: 'CompleteTask',
        data: {
          taskId,
          workerId: body.workerId,
          fencingToken: body.fencingToken,
          outcome: body.outcome,
          ...(body.output !== undefined ? { output: body.output } : {}),
          ...(body.error !== undefined ? { error: body.error } : {}),
          nextAttemptId: this.executions.ids.uuid(),
          jitter: Math.random(),
        },
        metadata: { now: this.executions.clock.now(), actor: workerActor(body.workerId) },
      };
    });
    const task = taskIn(outcome.state, taskId);
    const workspaceId = outcome.state.status === 'not_started' ? '' : outcome.state.workspaceId;
    const executionId = executionOfTask(taskId);
    this.board.offer(
      outcome.events.flatMap((e) =>
        e.type === 'TaskScheduled'
          ? [{ taskId: e.data.taskId, executionId, workspaceId, queue: e.data.queue, notBeforeMs: Date.parse(e.data.notBefore) }]
          : [],
      ),
    );
    return { taskId, status: task.status, position: lastPosition(outcome), workspaceId, queue: task.queue };
  }
}
