import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { parseBody, parseId } from '../../http/validation.js';
import { ClaimAttemptCommand } from '../application/claim-attempt.handler.js';
import { CompleteAttemptCommand } from '../application/complete-attempt.handler.js';
import { HeartbeatAttemptCommand } from '../application/heartbeat-attempt.handler.js';
import { claimBodySchema, completeBodySchema, heartbeatBodySchema } from '../application/request-schemas.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { claimAttemptContract, completeAttemptContract, heartbeatContract } from './worker-protocol.contract.js';

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
    const [execution, attempt] = [parseId(executionId, 'executionId'), parseId(attemptId, 'attemptId')];
    const { workerId } = parseBody(claimBodySchema, body);
    return this.commands.execute(new ClaimAttemptCommand(p, execution, attempt, workerId));
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
    const [execution, attempt] = [parseId(executionId, 'executionId'), parseId(attemptId, 'attemptId')];
    const { workerId, fencingToken } = parseBody(heartbeatBodySchema, body);
    return this.commands.execute(new HeartbeatAttemptCommand(p, execution, attempt, workerId, fencingToken));
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
    const [execution, attempt] = [parseId(executionId, 'executionId'), parseId(attemptId, 'attemptId')];
    return this.commands.execute(new CompleteAttemptCommand(p, execution, attempt, parseBody(completeBodySchema, body)));
  }
}
