import { Inject, Injectable } from '@nestjs/common';
import { UnavailableError } from '../../core/errors.js';
import { ID_GENERATOR, type IdGenerator } from '../../core/ids.js';
import { openSecret, sealSecret, type SecretBinding } from './secret-cipher.js';
import { SecretValues } from './secret-values.table.js';
import { SECRETS_KEYRING, type SecretsKeyring } from './secrets-keyring.js';

/** A stored value that cannot be read: its row is gone, or its key is not configured, or it does not authenticate. */
export class SecretValueUnreadableError extends Error {}

/**
 * Encrypts values into `secret_values` and reads them back, with the process's keyring. The
 * only place that sees a value in the clear besides the request that brought it and the answer
 * to a worker's resolution.
 */
@Injectable()
export class SecretVault {
  constructor(
    @Inject(SECRETS_KEYRING) private readonly keyring: SecretsKeyring,
    @Inject(SecretValues) private readonly values: SecretValues,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {}

  /** Seals `value` under the current key, bound to `binding`, as a new row; answers its value id. */
  async store(binding: SecretBinding, value: string): Promise<string> {
    const key = this.keyring.current;
    if (key === null) {
      throw new UnavailableError('secrets cannot be stored: this api process has no FLOSTRA_SECRETS_KEY (docs/operations.md)');
    }
    const valueId = this.ids.uuid();
    await this.values.insert({ valueId, ...binding, ...sealSecret(key, binding, value) });
    return valueId;
  }

  /** The value of row `valueId`, which must be bound to `binding`; null when the row does not exist (any more). */
  async read(valueId: string, binding: SecretBinding): Promise<string | null> {
    const row = await this.values.get(valueId);
    if (row === null) return null;
    const key = this.keyring.key(row.keyId);
    if (key === undefined) {
      throw new SecretValueUnreadableError(
        `secret ${binding.name} of workspace ${binding.workspaceId} is encrypted under key ${row.keyId}, which neither FLOSTRA_SECRETS_KEY nor FLOSTRA_SECRETS_PREVIOUS_KEYS holds here`,
      );
    }
    try {
      return openSecret(key, binding, row);
    } catch (error) {
      throw new SecretValueUnreadableError(
        `secret ${binding.name} (version ${binding.version}) of workspace ${binding.workspaceId} cannot be decrypted: ${(error as Error).message}`,
      );
    }
  }

  /** Removes rows no event references (any more). Best effort: the periodic clean-up removes what is left. */
  async discard(valueIds: readonly string[]): Promise<void> {
    await this.values.remove(valueIds);
  }
}
