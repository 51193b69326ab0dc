import { randomUUID } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireGlobalRole } from '../auth/authorization.js';
import { NotFoundError } from '../core/errors.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { requestRebuild } from '../projector/projection-catalog.js';
import type { AnyProjectionDefinition } from '../projector/projection-definition.js';
import { Projector } from '../projector/projector.js';
import { PROJECTION_DEFINITIONS } from '../projector/projector.module.js';

export class RebuildProjectionCommand extends Command<{ rebuildId: string; version: number }> {
  constructor(
    readonly principal: Principal,
    readonly name: string,
  ) {
    super();
  }
}

/**
 * Asks for a new version of a read model, built beside the live one from the log, which takes
 * over once caught up (promise 9, docs/architecture.md); progress shows on the projections list. System-admin only.
 */
@CommandHandler(RebuildProjectionCommand)
export class RebuildProjectionHandler implements ICommandHandler<RebuildProjectionCommand> {
  constructor(
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(PROJECTION_DEFINITIONS) private readonly definitions: readonly AnyProjectionDefinition[],
    @Inject(Projector) private readonly projector: Projector,
  ) {}

  async execute({ principal, name }: RebuildProjectionCommand): Promise<{ rebuildId: string; version: number }> {
    requireGlobalRole(principal, 'system-admin');
    const definition = this.definitions.find((d) => d.name === name);
    if (definition === undefined) throw new NotFoundError(`projection ${name} not found`);
    const { rebuildId, version } = await requestRebuild(this.sql, definition, randomUUID());
    this.projector.poke();
    return { rebuildId, version };
  }
}
