import { Body, Controller, Get, Param, Put, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { parseBody, parseName } from '../../http/validation.js';
import { PublishWorkflowHandler } from '../application/publish-workflow.handler.js';
import { workflowRevisionQuerySchema as getQuerySchema } from '../application/request-schemas.js';
import { WorkflowQueries } from '../application/workflow.queries.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { getWorkflowContract, publishWorkflowContract } from './workflows.contract.js';

@Controller('v1/workspaces/:workspaceId/workflows/:name')
export class WorkflowsController {
  constructor(
    private readonly publish: PublishWorkflowHandler,
    private readonly queries: WorkflowQueries,
  ) {}

  @ApiRoute(publishWorkflowContract)
  @Put()
  async put(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') rawWorkspaceId: string,
    @Param('name') rawName: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ) {
    const workspaceId = parseName(rawWorkspaceId, 'workspaceId');
    const name = parseName(rawName, 'name');
    requireWorkspaceRole(principal, workspaceId, 'editor');
    const result = await this.publish.execute({ workspaceId, name, body, actor: principal.subject });
    res.status(result.status);
    return { ...result.body, position: result.position };
  }

  @ApiRoute(getWorkflowContract)
  @Get()
  async get(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') rawWorkspaceId: string,
    @Param('name') rawName: string,
    @Query() rawQuery: unknown,
  ) {
    const workspaceId = parseName(rawWorkspaceId, 'workspaceId');
    const name = parseName(rawName, 'name');
    requireWorkspaceRole(principal, workspaceId, 'viewer');
    const { revision } = parseBody(getQuerySchema, rawQuery, 'query');
    return this.queries.getRevision(workspaceId, name, revision);
  }
}
