import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { requireTaskWorker, type Principal } from '../../auth/authorization.js';
import { workerActor } from '../../core/actors.js';
import { NotFoundError, StaleAttemptError } from '../../core/errors.js';
import { ExecutionStreams } from '../../executions/application/execution-streams.js';
import { TaskBoard, type BoardTask, type ClaimVerdict } from './task-board.js';
import { type PolledTask, polledTask, taskIn } from './task-protocol.js';

export type { PolledTask };

export class PollTaskCommand extends Command<PolledTask | null> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly queue: string,
    readonly workerId: string,
    readonly waitMs: number,
    /** Aborted when the poller's connection closed: nothing is claimed for it after that. */
    readonly signal: AbortSignal,
  ) {
    super();
  }
}

/** A poller asks for up to `max` tasks at once: the first as a poll waits for it, the others only if due now. */
export class PollTasksCommand extends Command<PolledTask[]> {
  constructor(
    readonly poll: PollTaskCommand,
    readonly max: number,
  ) {
    super();
  }
}

/**
 * A poller asks for the oldest due task of a queue, waiting up to `waitMs` (docs/api.md, "Task
 * queues"). The claim is a command on the task's execution stream (`TaskClaimed` with a fresh
 * fencing token, appended with the expected revision): only one poller ever wins a task.
 */
@CommandHandler(PollTaskCommand)
export class PollTaskHandler implements ICommandHandler<PollTaskCommand> {
  constructor(
    private readonly executions: ExecutionStreams,
    private readonly board: TaskBoard,
  ) {}

  async execute({ principal, workspaceId, queue, workerId, waitMs, signal }: PollTaskCommand): Promise<PolledTask | null> {
    requireTaskWorker(principal, workspaceId);
    return this.board.poll(workspaceId, queue, { waitMs, signal }, (task) => this.claim(task, workerId, signal));
  }

  /** The first task as `execute` waits for it; then up to `max - 1` more that are due now, each claimed as a poll claims it. */
  async several({ poll, max }: PollTasksCommand): Promise<PolledTask[]> {
    const { workspaceId, queue, workerId, signal } = poll;
    const first = await this.execute(poll);
    if (first === null) return [];
    const more = await Promise.all(
      Array.from({ length: max - 1 }, () =>
        this.board.poll(workspaceId, queue, { waitMs: 0, signal }, (task) => this.claim(task, workerId, signal)),
      ),
    );
    return [first, ...more.filter((task): task is PolledTask => task !== null)];
  }

  private async claim(task: BoardTask, workerId: string, signal: AbortSignal): Promise<ClaimVerdict<PolledTask>> {
    try {
      const outcome = await this.executions.handle(task.executionId, {
        type: 'ClaimTask',
        data: { taskId: task.taskId, workerId },
        metadata: { now: this.executions.clock.now(), actor: workerActor(workerId) },
      });
      const claimed = polledTask(task.executionId, taskIn(outcome.state, task.taskId));
      // Gone while the claim was being written: its lease simply runs out and the watchdog retries it.
      if (claimed === null || signal.aborted) return { gone: true };
      return { claimed };
    } catch (error) {
      if (error instanceof StaleAttemptError && typeof error.details?.['notBefore'] === 'string') return { notDue: true };
      // Claimed by another poller, cancelled, ended, or its execution is gone: not this poller's.
      if (error instanceof StaleAttemptError || error instanceof NotFoundError) return { gone: true };
      throw error;
    }
  }
}

@CommandHandler(PollTasksCommand)
export class PollTasksHandler implements ICommandHandler<PollTasksCommand> {
  constructor(private readonly poll: PollTaskHandler) {}

  execute(command: PollTasksCommand): Promise<PolledTask[]> {
    return this.poll.several(command);
  }
}
