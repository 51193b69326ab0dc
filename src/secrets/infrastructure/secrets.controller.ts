import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Put, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { parseBody, parseParams } from '../../http/validation.js';
import { DeleteSecretCommand } from '../application/delete-secret.handler.js';
import { ListSecretsQuery } from '../application/list-secrets.handler.js';
import { PutSecretCommand } from '../application/put-secret.handler.js';
import { putSecretBodySchema, secretParamsSchema, secretsParamsSchema } from '../application/request-schemas.js';
import { resolveSecretsQueryOf } from './secret-resolution.request.js';
import { deleteSecretContract, listSecretsContract, putSecretContract, resolveAttemptSecretsContract } from './secrets.contract.js';

/** A workspace's secrets over HTTP: names and versions in, never a value out (docs/api.md, "Secrets"). */
@Controller('v1/workspaces/:workspaceId/secrets')
export class SecretsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @ApiRoute(putSecretContract)
  @Put(':name')
  async put(
    @CurrentPrincipal() principal: Principal,
    @Param() rawParams: unknown,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { workspaceId, name } = parseParams(secretParamsSchema, rawParams);
    const { value } = parseBody(putSecretBodySchema, body);
    const result = await this.commands.execute(new PutSecretCommand(principal, workspaceId, name, value));
    res.status(result.created ? 201 : 200);
    return result.body;
  }

  @ApiRoute(listSecretsContract)
  @Get()
  list(@CurrentPrincipal() principal: Principal, @Param() rawParams: unknown) {
    const { workspaceId } = parseParams(secretsParamsSchema, rawParams);
    return this.queries.execute(new ListSecretsQuery(principal, workspaceId));
  }

  @ApiRoute(deleteSecretContract)
  @Delete(':name')
  @HttpCode(204)
  async delete(@CurrentPrincipal() principal: Principal, @Param() rawParams: unknown): Promise<void> {
    const { workspaceId, name } = parseParams(secretParamsSchema, rawParams);
    await this.commands.execute(new DeleteSecretCommand(principal, workspaceId, name));
  }
}

/** The worker's resolution of its claimed attempt's secrets, beside claim, heartbeat and complete (docs/api.md, "Worker protocol"). */
@Controller('v1/executions/:executionId/attempts/:attemptId')
export class SecretResolutionController {
  constructor(private readonly queries: QueryBus) {}

  @ApiRoute(resolveAttemptSecretsContract)
  @Post('secrets')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  resolve(
    @CurrentPrincipal() principal: Principal,
    @Param('executionId') executionId: string,
    @Param('attemptId') attemptId: string,
    @Body() body: unknown,
  ) {
    return this.queries.execute(resolveSecretsQueryOf(principal, executionId, attemptId, body));
  }
}
