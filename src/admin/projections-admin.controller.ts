import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Principal } from '../auth/authorization.js';
import { CurrentPrincipal } from '../auth/current-principal.decorator.js';
import { parseName } from '../http/validation.js';
import { ListProjectionsQuery } from './list-projections.handler.js';
import { RebuildProjectionCommand } from './rebuild-projection.handler.js';
import { ApiRoute } from '../http/openapi/route-contract.js';
import { listProjectionsContract, rebuildProjectionContract } from './projections-admin.contract.js';

/** The read models, for the global system-admin role only (docs/api.md, Admin). */
@Controller('v1/admin/projections')
export class ProjectionsAdminController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @ApiRoute(listProjectionsContract)
  @Get()
  list(@CurrentPrincipal() principal: Principal) {
    return this.queries.execute(new ListProjectionsQuery(principal));
  }

  /** 202: the new version builds beside the live one and takes over when caught up; progress on the GET. */
  @ApiRoute(rebuildProjectionContract)
  @Post(':name/rebuild')
  @HttpCode(202)
  rebuild(@CurrentPrincipal() principal: Principal, @Param('name') name: string) {
    return this.commands.execute(new RebuildProjectionCommand(principal, parseName(name, 'name')));
  }
}
