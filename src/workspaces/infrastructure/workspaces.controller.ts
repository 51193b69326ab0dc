import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { parseBody, parseName } from '../../http/validation.js';
import { ChangeWorkspaceSettingsCommand } from '../application/change-workspace-settings.handler.js';
import { GetWorkspaceSettingsQuery } from '../application/get-workspace-settings.handler.js';
import { workspaceSettingsBodySchema } from '../application/request-schemas.js';
import { getWorkspaceSettingsContract, putWorkspaceSettingsContract } from './workspaces.contract.js';

/** A workspace's settings over HTTP: input validated here, at the edge; authorization in the handlers. */
@Controller('v1/workspaces/:workspaceId/settings')
export class WorkspacesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @ApiRoute(getWorkspaceSettingsContract)
  @Get()
  get(@CurrentPrincipal() principal: Principal, @Param('workspaceId') workspaceId: string) {
    return this.queries.execute(new GetWorkspaceSettingsQuery(principal, parseName(workspaceId, 'workspaceId')));
  }

  @ApiRoute(putWorkspaceSettingsContract)
  @Put()
  put(@CurrentPrincipal() principal: Principal, @Param('workspaceId') workspaceId: string, @Body() body: unknown) {
    const id = parseName(workspaceId, 'workspaceId');
    return this.commands.execute(new ChangeWorkspaceSettingsCommand(principal, id, parseBody(workspaceSettingsBodySchema, body)));
  }
}
