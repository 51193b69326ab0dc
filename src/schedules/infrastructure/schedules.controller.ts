import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Put, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { parseBody, parseName } from '../../http/validation.js';
import { MIN_POSITION_HEADER, readRequirement } from '../../projector/read-consistency.js';
import { DeleteScheduleCommand } from '../application/delete-schedule.handler.js';
import { GetScheduleQuery } from '../application/get-schedule.handler.js';
import { ListSchedulesQuery } from '../application/list-schedules.handler.js';
import { PutScheduleCommand } from '../application/put-schedule.handler.js';
import { listSchedulesQuerySchema, putScheduleBodySchema } from '../application/request-schemas.js';
import { deleteScheduleContract, getScheduleContract, listSchedulesContract, putScheduleContract } from './schedules.contract.js';

/** A workspace's schedules over HTTP: input validated here, at the edge; authorization in the handlers. */
@Controller('v1/workspaces/:workspaceId/schedules')
export class SchedulesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @ApiRoute(putScheduleContract)
  @Put(':name')
  async put(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') workspaceId: string,
    @Param('name') name: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ) {
    const [ws, schedule] = [parseName(workspaceId, 'workspaceId'), parseName(name, 'name')];
    const result = await this.commands.execute(new PutScheduleCommand(principal, ws, schedule, parseBody(putScheduleBodySchema, body)));
    res.status(result.created ? 201 : 200);
    return result.view;
  }

  @ApiRoute(listSchedulesContract)
  @Get()
  list(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') workspaceId: string,
    @Query() rawQuery: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    const query = parseBody(listSchedulesQuerySchema, rawQuery, 'query');
    const ws = parseName(workspaceId, 'workspaceId');
    return this.queries.execute(new ListSchedulesQuery(principal, ws, query, readRequirement(query, minPosition)));
  }

  @ApiRoute(getScheduleContract)
  @Get(':name')
  get(@CurrentPrincipal() principal: Principal, @Param('workspaceId') workspaceId: string, @Param('name') name: string) {
    return this.queries.execute(new GetScheduleQuery(principal, parseName(workspaceId, 'workspaceId'), parseName(name, 'name')));
  }

  @ApiRoute(deleteScheduleContract)
  @Delete(':name')
  @HttpCode(204)
  async delete(@CurrentPrincipal() principal: Principal, @Param('workspaceId') workspaceId: string, @Param('name') name: string) {
    await this.commands.execute(new DeleteScheduleCommand(principal, parseName(workspaceId, 'workspaceId'), parseName(name, 'name')));
  }
}
