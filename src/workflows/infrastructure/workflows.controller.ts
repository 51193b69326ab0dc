import { Body, Controller, Get, Headers, Param, Put, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { parseBody, parseName } from '../../http/validation.js';
import { GetWorkflowQuery } from '../application/get-workflow.handler.js';
import { assertCodeCompiles, parsePublishBody, PublishWorkflowCommand } from '../application/publish-workflow.handler.js';
import { ListWorkflowsQuery } from '../application/list-workflows.handler.js';
import { workflowListQuerySchema, workflowRevisionQuerySchema } from '../application/request-schemas.js';
import { MIN_POSITION_HEADER, readRequirement } from '../../projector/read-consistency.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { CodeSyntaxChecker } from './code-syntax-checker.js';
import { getWorkflowContract, listWorkflowsContract, publishWorkflowContract } from './workflows.contract.js';

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
    await assertCodeCompiles(graph, this.code.forPublish(workspaceId));
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

/** The list of a workspace's workflows (a read model: read-your-writes). */
@Controller('v1/workspaces/:workspaceId/workflows')
export class WorkflowListController {
  constructor(private readonly queries: QueryBus) {}

  @ApiRoute(listWorkflowsContract)
  @Get()
  list(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') rawWorkspaceId: string,
    @Query() rawQuery: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    const query = parseBody(workflowListQuerySchema, rawQuery, 'query');
    return this.queries.execute(
      new ListWorkflowsQuery(principal, parseName(rawWorkspaceId, 'workspaceId'), readRequirement(query, minPosition)),
    );
  }
}
