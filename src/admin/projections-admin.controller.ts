import { Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { type Principal, requireGlobalRole } from '../auth/authorization.js';
import { CurrentPrincipal } from '../auth/current-principal.decorator.js';
import { parseName } from '../http/validation.js';
import { ProjectionsAdminService } from './projections-admin.service.js';
import { ApiRoute } from '../http/openapi/route-contract.js';
import { listProjectionsContract, rebuildProjectionContract } from './projections-admin.contract.js';

/** API.md "Admin and operations": the read models, for the global system-admin role only. */
@Controller('v1/admin/projections')
export class ProjectionsAdminController {
  constructor(@Inject(ProjectionsAdminService) private readonly admin: ProjectionsAdminService) {}

  @ApiRoute(listProjectionsContract)
  @Get()
  list(@CurrentPrincipal() principal: Principal) {
    requireGlobalRole(principal, 'system-admin');
    return this.admin.list();
  }

  /** 202: the new version builds beside the live one and takes over when caught up; progress on the GET. */
  @ApiRoute(rebuildProjectionContract)
  @Post(':name/rebuild')
  @HttpCode(202)
  async rebuild(@CurrentPrincipal() principal: Principal, @Param('name') name: string) {
    requireGlobalRole(principal, 'system-admin');
    const { rebuildId, version } = await this.admin.rebuild(parseName(name, 'name'));
    return { rebuildId, version };
  }
}
