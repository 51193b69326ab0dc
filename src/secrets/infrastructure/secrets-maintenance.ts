import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { ConfigError } from '../../config/config.js';
import { LOGGER, type Logger } from '../../core/logger.js';
import { SecretStreams } from '../application/secret-streams.js';
import { openSecret, sealSecret } from './secret-cipher.js';
import { SecretValues } from './secret-values.table.js';
import { SECRETS_KEYRING, type SecretsKeyring } from './secrets-keyring.js';

/** How often the api re-encrypts rows under old keys and removes rows nothing references. */
export const SECRETS_MAINTENANCE_PERIOD_MS = 10 * 60_000;
/** A row younger than this may belong to a put whose append is still on its way: never removed. */
export const UNREFERENCED_GRACE_SECONDS = 10 * 60;
const PAGE = 100;

export interface MaintenanceReport {
  /** Rows re-encrypted under the current key by this run. */
  resealed: number;
  /** Rows still under another key after it (their key is not configured, or they do not open). */
  remainingUnderOtherKeys: number;
  /** Rows no event references that were removed. */
  removed: number;
}

/**
 * The api's housekeeping of `secret_values` (docs/operations.md, "Secrets key and rotation"):
 * at start, it refuses to run when stored values are encrypted under a key it does not hold;
 * then, before it serves and every 10 minutes after, it re-encrypts rows sealed under a previous
 * key with the current one (rows change, events never do) and removes rows no event references:
 * those of a put whose append failed, and replaced or deleted versions a crash left behind. Several api
 * processes may do it at once: a re-encryption only replaces a row still under the key it read,
 * and removals are idempotent.
 */
@Injectable()
export class SecretsMaintenance implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log: Logger;
  private readonly stop = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    @Inject(SECRETS_KEYRING) private readonly keyring: SecretsKeyring,
    @Inject(SecretValues) private readonly values: SecretValues,
    private readonly secrets: SecretStreams,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ component: 'secrets' });
  }

  /** Before the api serves: the keys are checked and every row under a previous key re-encrypted. */
  async onApplicationBootstrap(): Promise<void> {
    await this.checkKeys();
    await this.runOnce();
    this.loop = this.every(SECRETS_MAINTENANCE_PERIOD_MS);
  }

  private async every(periodMs: number): Promise<void> {
    const { signal } = this.stop;
    while (!signal.aborted) {
      await sleep(periodMs, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) return;
      try {
        await this.runOnce();
      } catch (error) {
        this.log.warn('secrets maintenance failed; it runs again in 10 minutes', { error: String(error) });
      }
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stop.abort();
    await this.loop;
  }

  /** A ConfigError, naming the key ids, when some stored value is encrypted under a key this process does not hold. */
  async checkKeys(): Promise<void> {
    const counts = await this.values.countByKey();
    const known = new Set(this.keyring.ids);
    const unknown = [...counts].filter(([keyId]) => !known.has(keyId));
    if (unknown.length === 0) return;
    const rows = unknown.reduce((sum, [, n]) => sum + n, 0);
    const ids = unknown.map(([keyId]) => keyId).join(', ');
    const current = this.keyring.current;
    throw new ConfigError(
      current === null
        ? `FLOSTRA_SECRETS_KEY: required: ${rows} stored secret values are encrypted under key ${ids}; set the key they were written with`
        : `FLOSTRA_SECRETS_KEY: ${rows} stored secret values are encrypted under key ${ids}, which neither ${this.keyring.source} (key ${current.id}) nor FLOSTRA_SECRETS_PREVIOUS_KEYS holds; add the key they were written with to FLOSTRA_SECRETS_PREVIOUS_KEYS`,
      ['FLOSTRA_SECRETS_KEY'],
    );
  }

  /** One round: re-encrypt, then remove unreferenced rows older than `graceSeconds`. */
  async runOnce(options: { graceSeconds?: number } = {}): Promise<MaintenanceReport> {
    const { resealed, remaining } = await this.reseal();
    const removed = await this.removeUnreferenced(options.graceSeconds ?? UNREFERENCED_GRACE_SECONDS);
    if (resealed > 0 || remaining > 0) {
      const fields = { keyId: this.keyring.current?.id ?? null, resealed, remainingUnderOtherKeys: remaining };
      if (remaining > 0) this.log.warn('secrets re-encrypted under the current key; some remain under other keys', fields);
      else this.log.info('secrets re-encrypted under the current key', fields);
    }
    if (removed > 0) this.log.info('unreferenced secret value rows removed', { removed });
    return { resealed, remainingUnderOtherKeys: remaining, removed };
  }

  private async reseal(): Promise<{ resealed: number; remaining: number }> {
    const current = this.keyring.current;
    if (current === null) return { resealed: 0, remaining: 0 };
    let resealed = 0;
    let remaining = 0;
    let after: string | null = null;
    for (;;) {
      const rows = await this.values.underOtherKeys(current.id, after, PAGE);
      if (rows.length === 0) return { resealed, remaining };
      for (const row of rows) {
        after = row.valueId;
        const key = this.keyring.key(row.keyId);
        let value: string;
        try {
          if (key === undefined) throw new Error(`key ${row.keyId} is not configured`);
          value = openSecret(key, row, row);
        } catch (error) {
          remaining += 1;
          this.log.error('a stored secret value cannot be re-encrypted', {
            workspaceId: row.workspaceId,
            name: row.name,
            version: row.version,
            keyId: row.keyId,
            error: (error as Error).message,
          });
          continue;
        }
        if (await this.values.reseal(row.valueId, row.keyId, sealSecret(current, row, value))) resealed += 1;
      }
    }
  }

  private async removeUnreferenced(graceSeconds: number): Promise<number> {
    let removed = 0;
    for (const workspaceId of await this.values.workspacesWithRowsOlderThan(graceSeconds)) {
      const state = await this.secrets.load(workspaceId);
      const referenced = [...state.current.values()].map((secret) => secret.valueId);
      removed += await this.values.removeUnreferenced(workspaceId, referenced, graceSeconds);
    }
    return removed;
  }
}
