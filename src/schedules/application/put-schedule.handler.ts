import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { NotFoundError, ValidationFailedError } from '../../core/errors.js';
import { WorkflowQueries } from '../../workflows/application/workflow.queries.js';
import type { PutScheduleBody } from './request-schemas.js';
import { ScheduleStreams } from './schedule-streams.js';
import { toScheduleView, type ScheduleView } from './schedule.view.js';

export interface PutScheduleResult {
  /** True when the schedule did not exist (or was deleted) before: 201. */
  created: boolean;
  view: ScheduleView;
}

export class PutScheduleCommand extends Command<PutScheduleResult> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly name: string,
    readonly body: PutScheduleBody,
  ) {
    super();
  }
}

/**
 * `PUT /v1/workspaces/:workspaceId/schedules/:name`: defines the schedule, or records what changed
 * of it (nothing for the definition in force). The scheduler applies it at its next tick.
 */
@CommandHandler(PutScheduleCommand)
export class PutScheduleHandler implements ICommandHandler<PutScheduleCommand> {
  constructor(
    private readonly schedules: ScheduleStreams,
    private readonly workflows: WorkflowQueries,
  ) {}

  async execute({ principal, workspaceId, name, body }: PutScheduleCommand): Promise<PutScheduleResult> {
    requireWorkspaceRole(principal, workspaceId, 'editor');
    const { paused, ...definition } = body;
    try {
      await this.workflows.getRevision(workspaceId, definition.workflow);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      const message = `workflow ${definition.workflow} does not exist in workspace ${workspaceId}`;
      throw new ValidationFailedError(`invalid request body: body.workflow: ${message}`, [{ path: 'body.workflow', message }]);
    }
    const outcome = await this.schedules.put(workspaceId, name, definition, paused, principal.subject);
    return {
      created: outcome.events[0]?.type === 'ScheduleDefined',
      view: toScheduleView(outcome.state, outcome.position, this.schedules.clock.now()),
    };
  }
}
