import { Module } from '@nestjs/common';
import { ChangeWorkspaceSettingsHandler } from './application/change-workspace-settings.handler.js';
import { GetWorkspaceSettingsHandler } from './application/get-workspace-settings.handler.js';
import { WorkspacesController } from './infrastructure/workspaces.controller.js';
import { WorkspaceStreamsModule } from './workspace-streams.module.js';

/** The workspace settings API: its controller and the handlers of its command and query (on the app's CQRS buses). */
@Module({
  imports: [WorkspaceStreamsModule],
  controllers: [WorkspacesController],
  providers: [GetWorkspaceSettingsHandler, ChangeWorkspaceSettingsHandler],
})
export class WorkspacesModule {}
