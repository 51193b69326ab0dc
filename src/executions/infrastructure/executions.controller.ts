import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { parseId, parseName } from '../../http/validation.js';
import { MIN_POSITION_HEADER } from '../../projector/read-consistency.js';
import { ExecutionQueries } from '../application/execution.queries.js';
import { OperatorCommandsHandler } from '../application/operator-commands.handler.js';
import { StartExecutionHandler } from '../application/start-execution.handler.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import {
  cancelExecutionContract,
  decideApprovalContract,
  executionHistoryContract,
  getExecutionContract,
  listExecutionsContract,
  redriveExecutionContract,
  startExecutionContract,
} from './executions.contract.js';

@Controller('v1')
export class ExecutionsController {
  constructor(
    private readonly start: StartExecutionHandler,
    private readonly operator: OperatorCommandsHandler,
    private readonly queries: ExecutionQueries,
  ) {}

  @ApiRoute(startExecutionContract)
  @Post('workspaces/:workspaceId/workflows/:name/executions')
  async startExecution(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') workspaceId: string,
    @Param('name') name: string,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ) {
    const result = await this.start.execute({
      principal,
      workspaceId: parseName(workspaceId, 'workspaceId'),
      workflowName: parseName(name, 'name'),
      idempotencyKey,
      body,
    });
    res.status(result.replayed ? 200 : 201);
    return result.body;
  }

  /** Queries wait for the read model to reflect `?minPosition=` / X-Flostra-Min-Position, else the log's head. */
  @ApiRoute(listExecutionsContract)
  @Get('workspaces/:workspaceId/executions')
  list(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') workspaceId: string,
    @Query() query: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    return this.queries.list(principal, parseName(workspaceId, 'workspaceId'), query, minPosition);
  }

  @ApiRoute(getExecutionContract)
  @Get('executions/:executionId')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Query() query: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    return this.queries.get(principal, parseId(executionId, 'executionId'), query, minPosition);
  }

  @ApiRoute(executionHistoryContract)
  @Get('executions/:executionId/history')
  history(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Query() query: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    return this.queries.history(principal, parseId(executionId, 'executionId'), query, minPosition);
  }

  @ApiRoute(cancelExecutionContract)
  @Post('executions/:executionId/cancel')
  @HttpCode(202)
  cancel(@CurrentPrincipal() principal: Principal, @Param('executionId') executionId: string, @Body() body: unknown) {
    return this.operator.cancel(principal, parseId(executionId, 'executionId'), body);
  }

  @ApiRoute(decideApprovalContract)
  @Post('executions/:executionId/approvals/:nodeId')
  @HttpCode(202)
  approve(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Param('nodeId') nodeId: string,
    @Body() body: unknown,
  ) {
    return this.operator.decideApproval(principal, parseId(executionId, 'executionId'), parseName(nodeId, 'nodeId'), body);
  }

  @ApiRoute(redriveExecutionContract)
  @Post('executions/:executionId/redrive')
  @HttpCode(202)
  redrive(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Body() body: unknown,
  ) {
    return this.operator.redrive(principal, parseId(executionId, 'executionId'), idempotencyKey, body);
  }
}
