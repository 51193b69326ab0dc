import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { claimAttemptContract, completeAttemptContract, heartbeatContract } from './worker-protocol.contract.js';
import { claimCommandOf, completeCommandOf, heartbeatCommandOf } from './worker-protocol.requests.js';

/** The worker's synchronous protocol: claim, heartbeat, complete (docs/api.md, Worker protocol). */
@Controller('v1/executions/:executionId/attempts/:attemptId')
export class WorkerProtocolController {
  constructor(private readonly commands: CommandBus) {}

  @ApiRoute(claimAttemptContract)
  @Post('claim')
  @HttpCode(200)
  claim(
    @CurrentPrincipal() p: Principal,
    @Param('executionId') executionId: string,
    @Param('attemptId') attemptId: string,
    @Body() body: unknown,
  ) {
    return this.commands.execute(claimCommandOf(p, executionId, attemptId, body));
  }

  @ApiRoute(heartbeatContract)
  @Post('heartbeat')
  @HttpCode(200)
  heartbeat(
    @CurrentPrincipal() p: Principal,
    @Param('executionId') executionId: string,
    @Param('attemptId') attemptId: string,
    @Body() body: unknown,
  ) {
    return this.commands.execute(heartbeatCommandOf(p, executionId, attemptId, body));
  }

  @ApiRoute(completeAttemptContract)
  @Post('complete')
  @HttpCode(200)
  complete(
    @CurrentPrincipal() p: Principal,
    @Param('executionId') executionId: string,
    @Param('attemptId') attemptId: string,
    @Body() body: unknown,
  ) {
    return this.commands.execute(completeCommandOf(p, executionId, attemptId, body));
  }
}
