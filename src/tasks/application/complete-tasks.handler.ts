import { Command, CommandBus, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { DomainError } from '../../core/errors.js';
import { ExecutionStreams, lastPosition } from '../../executions/application/execution-streams.js';
import type { StartedExecution, TaskStatus } from '../../executions/domain/execution.state.js';
import { completeTaskCommand } from './complete-task.handler.js';
import { PollTaskCommand, PollTasksCommand } from './poll-task.handler.js';
import type { TaskBatchCompleteBody, TaskCompletionItem } from './request-schemas.js';
import { TaskBoard } from './task-board.js';
import { type PolledTask, authorizeTaskWorker, executionOfTask, polledTask, requireWithinOutputLimit, taskIn } from './task-protocol.js';

/** How one completion of a batch went: recorded (as the single route answers it), or refused with its own error. */
export type CompletionVerdict = { taskId: string; status: TaskStatus; position: string } | { taskId: string; rejected: DomainError };

export interface CompleteTasksResult {
  /** One per completion, in the request's order. */
  results: CompletionVerdict[];
  /** The tasks taken for the workers with the completions (`next`), each claimed as a poll claims it. */
  next: PolledTask[];
}

export class CompleteTasksCommand extends Command<CompleteTasksResult> {
  constructor(
    readonly principal: Principal,
    readonly body: TaskBatchCompleteBody,
    /** Aborted when the caller hung up: the tasks `next` would take by a poll are not claimed then. */
    readonly signal: AbortSignal,
  ) {
    super();
  }
}

/** Where the tasks a batch takes by a poll come from: the queue of its first recorded completion, for that completion's worker. */
interface PollFrom {
  workspaceId: string;
  queue: string;
  workerId: string;
}

/**
 * Records several completions (docs/api.md, "Task queues"). Those of one execution are decided
 * together and go in ONE append (ExecutionStreams.handleBatch): sibling tasks ending at once no
 * longer race for the stream, and the task they schedule (a join) is claimed in the same append
 * when `next` asks for tasks. Each completion is decided exactly as the single route decides it,
 * and refused on its own (stale_attempt, lease_expired, not_found…) without failing the others.
 * Executions are handled side by side; `next` is shared out among them, and what they did not
 * claim is taken by a poll of the queue that does not wait.
 */
@CommandHandler(CompleteTasksCommand)
export class CompleteTasksHandler implements ICommandHandler<CompleteTasksCommand> {
  constructor(
    private readonly executions: ExecutionStreams,
    private readonly board: TaskBoard,
    private readonly commands: CommandBus,
  ) {}

  async execute({ principal, body, signal }: CompleteTasksCommand): Promise<CompleteTasksResult> {
    const { completions } = body;
    const results: CompletionVerdict[] = new Array<CompletionVerdict>(completions.length);
    const byExecution = new Map<string, number[]>();
    completions.forEach((completion, index) => {
      try {
        requireWithinOutputLimit('output', completion.output);
        const executionId = executionOfTask(completion.taskId);
        byExecution.set(executionId, [...(byExecution.get(executionId) ?? []), index]);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        results[index] = { taskId: completion.taskId, rejected: error };
      }
    });
    const groups = [...byExecution];
    const next: PolledTask[] = [];
    let pollFrom: PollFrom | null = null;
    await Promise.all(
      groups.map(async ([executionId, indexes], g) => {
        const share = Math.floor(body.next / groups.length) + (g < body.next % groups.length ? 1 : 0);
        const items = indexes.map((index) => completions[index]);
        const decided = await this.completeAll(principal, executionId, items, share);
        indexes.forEach((index, k) => (results[index] = decided.results[k]));
        next.push(...decided.next);
        pollFrom ??= decided.pollFrom;
      }),
    );
    const wanted = body.next - next.length;
    if (wanted > 0 && pollFrom !== null) {
      const { workspaceId, queue, workerId } = pollFrom as PollFrom;
      next.push(
        ...(await this.commands.execute(
          new PollTasksCommand(new PollTaskCommand(principal, workspaceId, queue, workerId, 0, signal), wanted),
        )),
      );
    }
    return { results, next };
  }

  /** The completions of one execution, in one append; each later one may claim what the earlier ones left of `share`. */
  private async completeAll(
    principal: Principal,
    executionId: string,
    items: TaskCompletionItem[],
    share: number,
  ): Promise<{ results: CompletionVerdict[]; next: PolledTask[]; pollFrom: PollFrom | null }> {
    let before: StartedExecution | null = null;
    let outcome;
    try {
      outcome = await this.executions.handleBatch(
        executionId,
        items.map((item, k) => (state) => {
          const started = authorizeTaskWorker(principal, state);
          // Every decision of the batch begins with the first item, on the state the append starts from.
          if (k === 0 || before === null) before = started;
          // Claims are the only facts that draw fencing tokens here: those taken so far count against the share.
          const left = share - (started.lastFencingToken - before.lastFencingToken);
          const queue = started.tasks[item.taskId]?.queue;
          const claim = left > 0 && queue !== undefined && this.board.nextDueIsOf(started.workspaceId, queue, executionId);
          return completeTaskCommand(this.executions, item, claim ? left : 0);
        }),
      );
    } catch (error) {
      // Nothing of this execution was written (e.g. its stream stayed contended): each of its completions says so.
      if (!(error instanceof DomainError)) throw error;
      return { results: items.map((item) => ({ taskId: item.taskId, rejected: error })), next: [], pollFrom: null };
    }
    const { state, verdicts, events } = outcome;
    let pollFrom: PollFrom | null = null;
    const results = items.map((item, k): CompletionVerdict => {
      const verdict = verdicts[k];
      if ('rejected' in verdict) return { taskId: item.taskId, rejected: verdict.rejected };
      const task = taskIn(state, item.taskId);
      if (state.status !== 'not_started') pollFrom ??= { workspaceId: state.workspaceId, queue: task.queue, workerId: item.workerId };
      return { taskId: item.taskId, status: task.status, position: lastPosition(outcome) };
    });
    const next = events.flatMap((e) => (e.type === 'TaskClaimed' ? [polledTask(executionId, taskIn(state, e.data.taskId))] : []));
    return { results, next: next.filter((task): task is PolledTask => task !== null), pollFrom };
  }
}
