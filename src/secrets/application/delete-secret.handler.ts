import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { LOGGER, type Logger } from '../../core/logger.js';
import { SecretVault } from '../infrastructure/secret-vault.js';
import { SecretStreams } from './secret-streams.js';

export class DeleteSecretCommand extends Command<void> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly name: string,
  ) {
    super();
  }
}

/** Deletes a secret: one append of SecretDeleted, then its value's row is removed (else by the clean-up). */
@CommandHandler(DeleteSecretCommand)
export class DeleteSecretHandler implements ICommandHandler<DeleteSecretCommand> {
  private readonly log: Logger;

  constructor(
    private readonly secrets: SecretStreams,
    private readonly vault: SecretVault,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ component: 'secrets' });
  }

  async execute({ principal, workspaceId, name }: DeleteSecretCommand): Promise<void> {
    requireWorkspaceRole(principal, workspaceId, 'admin');
    const outcome = await this.secrets.handle(workspaceId, {
      type: 'DeleteSecret',
      data: { name },
      metadata: { now: this.secrets.clock.now(), actor: principal.subject },
    });
    const deleted = outcome.before.current.get(name);
    if (deleted === undefined) return;
    try {
      await this.vault.discard([deleted.valueId]);
    } catch (error) {
      this.log.warn('a deleted secret value row was left for the clean-up', { error: String(error) });
    }
  }
}
