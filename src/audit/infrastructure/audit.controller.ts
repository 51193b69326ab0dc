import { Controller, Get, Headers, Param, Query } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { parseBody, parseName } from '../../http/validation.js';
import { MIN_POSITION_HEADER, readRequirement } from '../../projector/read-consistency.js';
import { GetAuditTrailQuery } from '../application/get-audit-trail.handler.js';
import { auditQuerySchema } from '../application/request-schemas.js';
import { auditTrailContract } from './audit.contract.js';

/** The audit trail over HTTP: input validated here, authorization in the query handler. */
@Controller('v1')
export class AuditController {
  constructor(private readonly queries: QueryBus) {}

  @ApiRoute(auditTrailContract)
  @Get('workspaces/:workspaceId/audit')
  trail(
    @CurrentPrincipal() principal: Principal,
    @Param('workspaceId') workspaceId: string,
    @Query() rawQuery: unknown,
    @Headers(MIN_POSITION_HEADER) minPosition: string | undefined,
  ) {
    const query = parseBody(auditQuerySchema, rawQuery, 'query');
    return this.queries.execute(
      new GetAuditTrailQuery(principal, parseName(workspaceId, 'workspaceId'), query, readRequirement(query, minPosition)),
    );
  }
}
