import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { toSettingsView, type WorkspaceSettingsView } from './workspace-settings.view.js';
import { WorkspaceStreams } from './workspace-streams.js';

export class GetWorkspaceSettingsQuery extends Query<WorkspaceSettingsView> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
  ) {
    super();
  }
}

/** A workspace's settings, read from its stream: always current. */
@QueryHandler(GetWorkspaceSettingsQuery)
export class GetWorkspaceSettingsHandler implements IQueryHandler<GetWorkspaceSettingsQuery> {
  constructor(private readonly workspaces: WorkspaceStreams) {}

  async execute({ principal, workspaceId }: GetWorkspaceSettingsQuery): Promise<WorkspaceSettingsView> {
    requireWorkspaceRole(principal, workspaceId, 'viewer');
    return toSettingsView(workspaceId, await this.workspaces.settings(workspaceId));
  }
}
