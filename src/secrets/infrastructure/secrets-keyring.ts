import { createHash } from 'node:crypto';
import type { AppConfig, SecretKeyBytes } from '../../config/config.js';

/** One encryption key and its id: the first 8 bytes of its SHA-256, in hex (it names the key, it does not reveal it). */
export interface SecretKey {
  readonly id: string;
  readonly bytes: Buffer;
}

export function secretKeyOf(key: SecretKeyBytes): SecretKey {
  return { id: createHash('sha256').update(key.bytes).digest().subarray(0, 8).toString('hex'), bytes: key.bytes };
}

/** Injection token of the process's SecretsKeyring. */
export const SECRETS_KEYRING = Symbol('SecretsKeyring');

/**
 * The keys this process knows: the current one, which encrypts every new value and re-encrypts
 * old ones, and previous ones, which only decrypt (docs/operations.md, "Secrets key and
 * rotation"). Each stored value records the id of the key that encrypted it.
 */
export class SecretsKeyring {
  private readonly byId = new Map<string, SecretKey>();

  constructor(
    /** Null when no key is configured: nothing can be written or read. */
    readonly current: SecretKey | null,
    previous: readonly SecretKey[] = [],
    /** Where the current key came from, for messages: the variable, or the embedded key file. */
    readonly source: string = 'FLOSTRA_SECRETS_KEY',
  ) {
    for (const key of [...(current === null ? [] : [current]), ...previous]) if (!this.byId.has(key.id)) this.byId.set(key.id, key);
  }

  static fromConfig(config: AppConfig): SecretsKeyring {
    const current = config.secretsKey === null ? null : secretKeyOf(config.secretsKey);
    const source = config.secretsKeyFile === null ? 'FLOSTRA_SECRETS_KEY' : `the key file ${config.secretsKeyFile}`;
    return new SecretsKeyring(current, config.secretsPreviousKeys.map(secretKeyOf), source);
  }

  key(id: string): SecretKey | undefined {
    return this.byId.get(id);
  }

  /** Ids of every key that can decrypt, current first. */
  get ids(): string[] {
    return [...this.byId.keys()];
  }
}
