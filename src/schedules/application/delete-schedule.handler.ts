import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
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

/** `DELETE …/schedules/:name`: no fire after it; executions it started run on. A missing schedule is 404. */
@CommandHandler(DeleteScheduleCommand)
export class DeleteScheduleHandler implements ICommandHandler<DeleteScheduleCommand> {
  constructor(private readonly schedules: ScheduleStreams) {}

  async execute({ principal, workspaceId, name }: DeleteScheduleCommand): Promise<void> {
    requireWorkspaceRole(principal, workspaceId, 'editor');
    await this.schedules.delete(workspaceId, name, principal.subject);
  }
}
