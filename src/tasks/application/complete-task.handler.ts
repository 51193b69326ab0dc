import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { workerActor } from '../../core/actors.js';
import { ExecutionStreams, lastPosition } from '../../executions/application/execution-streams.js';
import type { TaskStatus } from '../../executions/domain/execution.state.js';
import type { CompleteTask } from '../../executions/domain/execution.commands.js';
import type { TaskCompleteBody, TaskCompletionItem } from './request-schemas.js';
import { TaskBoard } from './task-board.js';
import { type PolledTask, authorizeTaskWorker, executionOfTask, polledTask, requireWithinOutputLimit, taskIn } from './task-protocol.js';

export interface CompleteTaskResult {
  taskId: string;
  status: TaskStatus;
  position: string;
  /** Where the task was queued: where a `next` task is taken from. */
  workspaceId: string;
  queue: string;
  /** The next task, claimed for the same worker in the completion's own append (`next` asked for it, and one was due). */
  next?: PolledTask;
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

/** The decider's command for a worker's completion of a task, claiming up to `claimNext` due tasks of its execution with it. */
export function completeTaskCommand(
  executions: Pick<ExecutionStreams, 'ids' | 'clock'>,
  completion: TaskCompletionItem,
  claimNext: number,
): CompleteTask {
  return {
    type: 'CompleteTask',
    data: {
      taskId: completion.taskId,
      workerId: completion.workerId,
      fencingToken: completion.fencingToken,
      outcome: completion.outcome,
      ...(completion.output !== undefined ? { output: completion.output } : {}),
      ...(completion.error !== undefined ? { error: completion.error } : {}),
      nextAttemptId: executions.ids.uuid(),
      jitter: Math.random(),
      ...(claimNext > 0 ? { claimNext: claimNext === 1 ? true : claimNext } : {}),
    },
    metadata: { now: executions.clock.now(), actor: workerActor(completion.workerId) },
  };
}

/**
 * Records how the current claim of a task ended (fenced, like an attempt's completion): the task
 * node's result, or its next try by the node's retry policy; a suspended execution resumes. The
 * same completion sent again is a replay. With `next`, when the task a poll of the queue would be
 * handed now is one of this execution (typically a successor this very completion schedules), the
 * same append also claims it for the worker (the decider's `claimNext`): one append instead of
 * two. Tasks the completion scheduled and did not claim go on this process's board at once
 * (TaskBoard listens to the append).
 */
@CommandHandler(CompleteTaskCommand)
export class CompleteTaskHandler implements ICommandHandler<CompleteTaskCommand> {
  constructor(
    private readonly executions: ExecutionStreams,
    private readonly board: TaskBoard,
  ) {}

  async execute({ principal, taskId, body }: CompleteTaskCommand): Promise<CompleteTaskResult> {
    requireWithinOutputLimit('output', body.output);
    const executionId = executionOfTask(taskId);
    const outcome = await this.executions.handle(executionId, (state) => {
      const started = authorizeTaskWorker(principal, state);
      const queue = started.tasks[taskId]?.queue;
      const claimNext = body.next === true && queue !== undefined && this.board.nextDueIsOf(started.workspaceId, queue, executionId);
      return completeTaskCommand(this.executions, { ...body, taskId }, claimNext ? 1 : 0);
    });
    const task = taskIn(outcome.state, taskId);
    const workspaceId = outcome.state.status === 'not_started' ? '' : outcome.state.workspaceId;
    const result: CompleteTaskResult = { taskId, status: task.status, position: lastPosition(outcome), workspaceId, queue: task.queue };
    const claimed = outcome.events.find((e) => e.type === 'TaskClaimed');
    const next = claimed === undefined ? null : polledTask(executionId, taskIn(outcome.state, claimed.data.taskId));
    return next === null ? result : { ...result, next };
  }
}
