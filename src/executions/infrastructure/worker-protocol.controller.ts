import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { parseId } from '../../http/validation.js';
import { WorkerProtocolHandler } from '../application/worker-protocol.handler.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { claimAttemptContract, completeAttemptContract, heartbeatContract } from './worker-protocol.contract.js';

@Controller('v1/executions/:executionId/attempts/:attemptId')
export class WorkerProtocolController {
  constructor(private readonly worker: WorkerProtocolHandler) {}

  @ApiRoute(claimAttemptContract)
  @Post('claim')
  @HttpCode(200)
  claim(@CurrentPrincipal() p: Principal, @Param('executionId') executionId: string, @Param('attemptId') attemptId: string, @Body() body: unknown) {
    return this.worker.claim(p, parseId(executionId, 'executionId'), parseId(attemptId, 'attemptId'), body);
  }

  @ApiRoute(heartbeatContract)
  @Post('heartbeat')
  @HttpCode(200)
  heartbeat(@CurrentPrincipal() p: Principal, @Param('executionId') executionId: string, @Param('attemptId') attemptId: string, @Body() body: unknown) {
    return this.worker.heartbeat(p, parseId(executionId, 'executionId'), parseId(attemptId, 'attemptId'), body);
  }

  @ApiRoute(completeAttemptContract)
  @Post('complete')
  @HttpCode(200)
  complete(@CurrentPrincipal() p: Principal, @Param('executionId') executionId: string, @Param('attemptId') attemptId: string, @Body() body: unknown) {
    return this.worker.complete(p, parseId(executionId, 'executionId'), parseId(attemptId, 'attemptId'), body);
  }
}
