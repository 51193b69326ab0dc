import { Controller, Get, Headers, Inject, Param, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { Principal } from '../auth/authorization.js';
import { CurrentPrincipal } from '../auth/current-principal.decorator.js';
import { parseBody, parseId, parseName } from '../http/validation.js';
import { LiveStreams, type ResumeFrom } from './live-streams.service.js';
import { eventsQuerySchema, positionSchema } from './live-request-schemas.js';
import { ApiRoute } from '../http/openapi/route-contract.js';
import { executionEventsContract, workspaceEventsContract } from './live.contract.js';

/**
 * The resume point: the Last-Event-ID header an EventSource sends when it reconnects wins over
 * `?lastEventId=`, which only serves a first connection (EventSource cannot set headers).
 */
function resumePosition(header: string | undefined, rawQuery: unknown): ResumeFrom | undefined {
  const { lastEventId } = parseBody(eventsQuerySchema, rawQuery, 'query');
  if (header === undefined || header === '')
    return lastEventId === undefined ? undefined : { position: lastEventId, source: 'query.lastEventId' };
  return { position: parseBody(positionSchema, header, 'Last-Event-ID'), source: 'Last-Event-ID' };
}

/** Live events over Server-Sent Events (docs/api.md, "Live events (SSE)"). */
@Controller('v1')
export class LiveController {
  constructor(@Inject(LiveStreams) private readonly streams: LiveStreams) {}

  @ApiRoute(executionEventsContract)
  @Get('executions/:executionId/events')
  async executionEvents(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query() query: unknown,
    @Res() res: Response,
  ): Promise<void> {
    const id = parseId(executionId, 'executionId');
    await this.streams.openExecutionStream(principal, id, resumePosition(lastEventId, query), res);
  }

  @ApiRoute(workspaceEventsContract)
  @Get('workspaces/:workspaceId/events')
  async workspaceEvents(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') workspaceId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query() query: unknown,
    @Res() res: Response,
  ): Promise<void> {
    const id = parseName(workspaceId, 'workspaceId');
    await this.streams.openWorkspaceStream(principal, id, resumePosition(lastEventId, query), res);
  }
}
