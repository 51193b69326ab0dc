import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { NotFoundError } from '../../core/errors.js';
import { ScheduleStreams } from './schedule-streams.js';

export class DeleteScheduleCommand extends Command<void> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly name: string,
  ) {
    super();
  }
}

/**
 * `DELETE …/schedules/:name`: no fire after it; executions it started run on. A missing schedule is
 * 404. The name's place in the workspace's register is given back after the delete, and by a
 * delete of a schedule that is gone too: a delete or a create that stopped half-way is finished so.
 */
@CommandHandler(DeleteScheduleCommand)
export class DeleteScheduleHandler implements ICommandHandler<DeleteScheduleCommand> {
  constructor(private readonly schedules: ScheduleStreams) {}

  async execute({ principal, workspaceId, name }: DeleteScheduleCommand): Promise<void> {
    requireWorkspaceRole(principal, workspaceId, 'editor');
    try {
      await this.schedules.delete(workspaceId, name, principal.subject);
    } catch (error) {
      if (error instanceof NotFoundError) await this.schedules.unregister(workspaceId, name, principal.subject);
      throw error;
    }
    await this.schedules.unregister(workspaceId, name, principal.subject);
  }
}
