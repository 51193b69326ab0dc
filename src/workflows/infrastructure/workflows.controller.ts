import { Body, Controller, Get, Param, Put, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { parseBody, parseName } from '../../http/validation.js';
import { GetWorkflowQuery } from '../application/get-workflow.handler.js';
import { assertCodeCompiles, parsePublishBody, PublishWorkflowCommand } from '../application/publish-workflow.handler.js';
import { workflowRevisionQuerySchema } from '../application/request-schemas.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { CodeSyntaxChecker } from './code-syntax-checker.js';
import { getWorkflowContract, publishWorkflowContract } from './workflows.contract.js';

/** Workflows over HTTP: input validated here, at the edge; commands and queries go through the CQRS buses. */
@Controller('v1/workspaces/:workspaceId/workflows/:name')
export class WorkflowsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly code: CodeSyntaxChecker,
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
    const graph = parsePublishBody(body);
    await assertCodeCompiles(graph, this.code.check);
    const result = await this.commands.execute(new PublishWorkflowCommand(principal, workspaceId, name, graph));
    res.status(result.status);
    return { ...result.body, position: result.position };
  }

  @ApiRoute(getWorkflowContract)
  @Get()
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') rawWorkspaceId: string,
    @Param('name') rawName: string,
    @Query() rawQuery: unknown,
  ) {
    const workspaceId = parseName(rawWorkspaceId, 'workspaceId');
    const name = parseName(rawName, 'name');
    const { revision } = parseBody(workflowRevisionQuerySchema, rawQuery, 'query');
    return this.queries.execute(new GetWorkflowQuery(principal, workspaceId, name, revision));
  }
}
