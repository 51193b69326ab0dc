import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { LOGGER, type Logger } from '../../core/logger.js';
import { nextSecretVersion, SecretVersionTakenError } from '../domain/secrets.decider.js';
import { SecretVault } from '../infrastructure/secret-vault.js';
import { SecretStreams } from './secret-streams.js';

export interface SecretSummary {
  name: string;
  version: number;
  updatedAt: string;
}

export interface PutSecretResult {
  /** True when the name did not exist: 201. */
  created: boolean;
  body: SecretSummary;
}

export class PutSecretCommand extends Command<PutSecretResult> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly name: string,
    readonly value: string,
  ) {
    super();
  }
}

/** Versions a put may lose to concurrent puts of the same name before it gives up (409). */
const MAX_VERSION_RACES = 10;

/**
 * Promise 12 (docs/architecture.md): the value goes to `secret_values` as ciphertext, the event
 * carries only the row's id. Puts a new version of a secret without a dual write (docs/architecture.md, "Secrets"): the
 * value is sealed into a new `secret_values` row first, bound to the version the stream says is
 * next; then one append of SecretPut, expecting that version, commits it. A row whose append
 * failed is referenced by nothing and inert (removed here if possible, else by the clean-up); a
 * put that lost the version to a concurrent one seals again with the next. The replaced
 * version's row is removed once the event is in.
 */
@CommandHandler(PutSecretCommand)
export class PutSecretHandler implements ICommandHandler<PutSecretCommand> {
  private readonly log: Logger;

  constructor(
    private readonly secrets: SecretStreams,
    private readonly vault: SecretVault,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ component: 'secrets' });
  }

  async execute({ principal, workspaceId, name, value }: PutSecretCommand): Promise<PutSecretResult> {
    requireWorkspaceRole(principal, workspaceId, 'admin');
    for (let race = 0; ; race++) {
      const version = nextSecretVersion(await this.secrets.load(workspaceId), name);
      const valueId = await this.vault.store({ workspaceId, name, version }, value);
      let outcome;
      try {
        outcome = await this.secrets.handle(workspaceId, {
          type: 'PutSecret',
          data: { name, version, valueId },
          metadata: { now: this.secrets.clock.now(), actor: principal.subject },
        });
      } catch (error) {
        await this.discard([valueId]);
        if (error instanceof SecretVersionTakenError && race < MAX_VERSION_RACES) continue;
        throw error;
      }
      const replaced = outcome.before.current.get(name);
      if (replaced !== undefined) await this.discard([replaced.valueId]);
      const put = outcome.state.current.get(name)!;
      return { created: replaced === undefined, body: { name, version: put.version, updatedAt: put.updatedAt } };
    }
  }

  private async discard(valueIds: string[]): Promise<void> {
    try {
      await this.vault.discard(valueIds);
    } catch (error) {
      this.log.warn('an unreferenced secret value row was left for the clean-up', { error: String(error) });
    }
  }
}
