import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type AppConfig, ConfigError, isEmbedded, parseSecretKeyText, type SecretKeyBytes } from '../../config/config.js';

export const SECRETS_KEY_FILE_NAME = 'secrets.key';

/**
 * Embedded mode without FLOSTRA_SECRETS_KEY: the configuration with the key of
 * `<dataDir>/secrets.key`, generated (32 random bytes, base64, mode 0600) on the first start
 * and used ever after. The file is never overwritten: two processes starting at once agree on
 * one (it is written aside and linked into place, which fails for the second), and a file that
 * does not hold a key stops the start instead of being replaced. Any other configuration is
 * returned as it is.
 */
export async function withEmbeddedSecretsKey(config: AppConfig): Promise<AppConfig> {
  if (!isEmbedded(config) || config.secretsKey !== null) return config;
  const path = join(config.dataDir, SECRETS_KEY_FILE_NAME);
  const key = (await readKeyFile(path)) ?? (await createKeyFile(config.dataDir, path));
  return Object.freeze({ ...config, secretsKey: key, secretsKeyFile: path });
}

async function createKeyFile(dataDir: string, path: string): Promise<SecretKeyBytes> {
  await mkdir(dataDir, { recursive: true });
  const scratch = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(scratch, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(scratch, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(scratch);
  }
  const key = await readKeyFile(path);
  if (key === null) throw new ConfigError(`FLOSTRA_DATA_DIR: ${path} vanished while it was being created`, ['FLOSTRA_DATA_DIR']);
  return key;
}

/** null when the file does not exist. */
async function readKeyFile(path: string): Promise<SecretKeyBytes | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new ConfigError(`FLOSTRA_DATA_DIR: cannot read the secrets key file ${path} (${code ?? 'error'})`, ['FLOSTRA_DATA_DIR']);
  }
  const key = parseSecretKeyText(text.trim());
  if (key === null) {
    throw new ConfigError(
      `FLOSTRA_DATA_DIR: ${path} does not hold a 32-byte key (base64 or hex); restore it from a backup: without it the stored secrets cannot be read, and it is never replaced`,
      ['FLOSTRA_DATA_DIR'],
    );
  }
  return key;
}
