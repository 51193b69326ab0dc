import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { NotFoundError } from '../../core/errors.js';
import { ScheduleStreams } from './schedule-streams.js';
import { toScheduleView, type ScheduleView } from './schedule.view.js';

export class GetScheduleQuery extends Query<ScheduleView> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly name: string,
  ) {
    super();
  }
}

/** One schedule, read from its stream: always current, with its next fire times as of now. */
@QueryHandler(GetScheduleQuery)
export class GetScheduleHandler implements IQueryHandler<GetScheduleQuery> {
  constructor(private readonly schedules: ScheduleStreams) {}

  async execute({ principal, workspaceId, name }: GetScheduleQuery): Promise<ScheduleView> {
    requireWorkspaceRole(principal, workspaceId, 'viewer');
    const { state, position } = await this.schedules.read(workspaceId, name);
    if (state.status !== 'active') throw new NotFoundError('schedule not found');
    return toScheduleView(state, position, this.schedules.clock.now());
  }
}
