import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { ValidationFailedError } from '../../core/errors.js';
import { parseBody, parseId, parseName } from '../../http/validation.js';
import { MIN_POSITION_HEADER, readRequirement } from '../../projector/read-consistency.js';
import { CancelExecutionCommand } from '../application/cancel-execution.handler.js';
import { DecideApprovalCommand } from '../application/decide-approval.handler.js';
import { GetExecutionHistoryQuery } from '../application/get-execution-history.handler.js';
import { GetExecutionQuery } from '../application/get-execution.handler.js';
import { ListExecutionsQuery } from '../application/list-executions.handler.js';
import { RedriveExecutionCommand } from '../application/redrive-execution.handler.js';
import { SendSignalCommand } from '../application/send-signal.handler.js';
import { signalNameSchema } from '../../workflows/domain/node-config.schema.js';
import {
  approvalBodySchema,
  cancelBodySchema,
  getExecutionQuerySchema,
  historyQuerySchema,
  idempotencyKeySchema,
  listExecutionsQuerySchema,
  redriveBodySchema,
  signalBodySchema,
  startExecutionBodySchema,
} from '../application/request-schemas.js';
import { StartExecutionCommand } from '../application/start-execution.handler.js';
import {
  cancelExecutionContract,
  decideApprovalContract,
  executionHistoryContract,
  getExecutionContract,
  listExecutionsContract,
  redriveExecutionContract,
  sendSignalContract,
  startExecutionContract,
} from './executions.contract.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';

/**
 * Executions over HTTP: input is validated here, at the edge, and handed on as a typed command
 * or query (CommandBus, QueryBus); authorization happens in the handlers, against the resource.
 */
@Controller('v1')
export class ExecutionsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
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
    const result = await this.commands.execute(
      new StartExecutionCommand(
        principal,
        parseName(workspaceId, 'workspaceId'),
        parseName(name, 'name'),
        idempotencyKey === undefined ? undefined : parseBody(idempotencyKeySchema, idempotencyKey, 'Idempotency-Key'),
        parseBody(startExecutionBodySchema, body),
      ),
    );
    res.status(result.replayed ? 200 : 201);
    return result.body;
  }

  /** Queries wait for the read model to reflect `?minPosition=` / X-Flostra-Min-Position, else the log's head. */
  @ApiRoute(listExecutionsContract)
  @Get('workspaces/:workspaceId/executions')
  list(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') workspaceId: string,
    @Query() rawQuery: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    const query = parseBody(listExecutionsQuerySchema, rawQuery, 'query');
    return this.queries.execute(
      new ListExecutionsQuery(principal, parseName(workspaceId, 'workspaceId'), query, readRequirement(query, minPosition)),
    );
  }

  @ApiRoute(getExecutionContract)
  @Get('executions/:executionId')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Query() rawQuery: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    const id = parseId(executionId, 'executionId');
    const query = parseBody(getExecutionQuerySchema, rawQuery, 'query');
    return this.queries.execute(new GetExecutionQuery(principal, id, readRequirement(query, minPosition)));
  }

  @ApiRoute(executionHistoryContract)
  @Get('executions/:executionId/history')
  history(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Query() rawQuery: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    const id = parseId(executionId, 'executionId');
    const query = parseBody(historyQuerySchema, rawQuery, 'query');
    return this.queries.execute(new GetExecutionHistoryQuery(principal, id, query, readRequirement(query, minPosition)));
  }

  @ApiRoute(cancelExecutionContract)
  @Post('executions/:executionId/cancel')
  @HttpCode(202)
  cancel(@CurrentPrincipal() principal: Principal, @Param('executionId') executionId: string, @Body() body: unknown) {
    const id = parseId(executionId, 'executionId');
    const { reason } = parseBody(cancelBodySchema, body);
    return this.commands.execute(new CancelExecutionCommand(principal, id, reason ?? null));
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
    const id = parseId(executionId, 'executionId');
    const node = parseName(nodeId, 'nodeId');
    return this.commands.execute(new DecideApprovalCommand(principal, id, node, parseBody(approvalBodySchema, body)));
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
    const id = parseId(executionId, 'executionId');
    if (idempotencyKey === undefined) {
      throw new ValidationFailedError('Idempotency-Key header is required for redrive', [{ path: 'Idempotency-Key', message: 'required' }]);
    }
    const key = parseBody(idempotencyKeySchema, idempotencyKey, 'Idempotency-Key');
    return this.commands.execute(new RedriveExecutionCommand(principal, id, key, parseBody(redriveBodySchema, body)));
  }

  @ApiRoute(sendSignalContract)
  @Post('executions/:executionId/signals/:name')
  @HttpCode(202)
  async signal(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Param('name') name: string,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Body() body: unknown,
  ) {
    const id = parseId(executionId, 'executionId');
    const signalName = parseBody(signalNameSchema, name, 'name');
    const key = idempotencyKey === undefined ? null : parseBody(idempotencyKeySchema, idempotencyKey, 'Idempotency-Key');
    const { payload } = parseBody(signalBodySchema, body ?? {});
    return this.commands.execute(new SendSignalCommand(principal, id, signalName, payload ?? null, key));
  }
}
