import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import type { WorkspaceSettingsBody } from './request-schemas.js';
import { toSettingsView, type WorkspaceSettingsView } from './workspace-settings.view.js';
import { WorkspaceStreams } from './workspace-streams.js';

export class ChangeWorkspaceSettingsCommand extends Command<WorkspaceSettingsView> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly settings: WorkspaceSettingsBody,
  ) {
    super();
  }
}

/**
 * `PUT /v1/workspaces/:workspaceId/settings`: one append of the new settings to the workspace's
 * stream, or none when they are unchanged. A new concurrency bound takes effect for the next
 * admission decision (docs/architecture.md, "Workspace quotas").
 */
@CommandHandler(ChangeWorkspaceSettingsCommand)
export class ChangeWorkspaceSettingsHandler implements ICommandHandler<ChangeWorkspaceSettingsCommand> {
  constructor(private readonly workspaces: WorkspaceStreams) {}

  async execute({ principal, workspaceId, settings }: ChangeWorkspaceSettingsCommand): Promise<WorkspaceSettingsView> {
    requireWorkspaceRole(principal, workspaceId, 'admin');
    return toSettingsView(workspaceId, await this.workspaces.changeSettings(workspaceId, settings, principal.subject));
  }
}
