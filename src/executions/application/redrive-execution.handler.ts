import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { sha256OfCanonical } from '../../core/canonical-json.js';
import { WorkspaceStreams } from '../../workspaces/application/workspace-streams.js';
import { authorizeOperator } from './authorize-operator.js';
import { ExecutionStreams, positionOf } from './execution-streams.js';
import type { RedriveBody } from './request-schemas.js';

export interface RedriveExecutionResult {
  redriveId: string;
  attemptId: string;
  attemptNumber: number;
  position: string;
}

export class RedriveExecutionCommand extends Command<RedriveExecutionResult> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly idempotencyKey: string,
    readonly body: RedriveBody,
  ) {
    super();
  }
}

/**
 * Schedules a new attempt of a failed, timed-out or cancelled execution (promise 2, docs/architecture.md: idempotent by key);
 * in a workspace with a concurrency bound the new run waits for a slot, as a start does.
 */
@CommandHandler(RedriveExecutionCommand)
export class RedriveExecutionHandler implements ICommandHandler<RedriveExecutionCommand> {
  constructor(
    private readonly executions: ExecutionStreams,
    private readonly workspaces: WorkspaceStreams,
  ) {}

  async execute({ principal, executionId, idempotencyKey: key, body }: RedriveExecutionCommand): Promise<RedriveExecutionResult> {
    const fingerprint = sha256OfCanonical(body);
    // The bound is the owning workspace's: known once the execution is, and read before deciding.
    const { state: found } = await this.executions.load(executionId);
    authorizeOperator(principal, found);
    const { state: workspace } = await this.workspaces.settings(found.workspaceId);
    const outcome = await this.executions.handle(executionId, (state) => {
      authorizeOperator(principal, state);
      return {
        type: 'RequestRedrive',
        data: {
          redriveId: this.executions.ids.uuid(),
          idempotencyKey: key,
          fingerprint,
          attemptId: this.executions.ids.uuid(),
          waitFor: workspace.settings.maxConcurrentExecutions === null ? null : 'workspace_quota',
        },
        metadata: { now: this.executions.clock.now(), actor: principal.subject },
      };
    });
    const state = outcome.state;
    if (state.status === 'not_started') throw new Error('unreachable: the decider refuses a missing execution');
    // The answer is the snapshot recorded by the first request, whatever happened since.
    const record = state.redrives[key];
    if (record === undefined) throw new Error('a handled redrive left no record of its key');
    const position =
      outcome.appended?.position ??
      positionOf(
        outcome.history,
        (e) =>
          (e.type === 'AttemptScheduled' || e.type === 'ExecutionAwaitingSlot') &&
          (e.data as { attemptId: string }).attemptId === record.attemptId,
      );
    return { redriveId: record.redriveId, attemptId: record.attemptId, attemptNumber: record.attemptNumber, position };
  }
}
