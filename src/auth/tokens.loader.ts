import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { z } from 'zod';
import { ConfigError, isEmbedded, type AppConfig } from '../config/config.js';
import { TokenRegistry } from './token-registry.js';
import { devTokensFileSchema, tokensFileSchema, type DevTokens, type TokenEntry } from './tokens-file.schema.js';

export const DEV_WORKSPACE = 'dev';
export const DEV_TOKENS_FILE_NAME = 'dev-tokens.json';

function describeIssues(error: z.ZodError): string {
  // Paths and messages only: an issue must never echo a token back into a log.
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}

async function readJson(path: string, variable: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`, [variable]);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ConfigError(`${variable}: ${path} is not valid JSON`, [variable]);
  }
}

/** Reads and validates a FLOSTRA_TOKENS_FILE; any problem is a ConfigError naming it. */
export async function readTokensFile(path: string): Promise<TokenEntry[]> {
  const parsed = tokensFileSchema.safeParse(await readJson(path, 'FLOSTRA_TOKENS_FILE'));
  if (!parsed.success) {
    throw new ConfigError(`FLOSTRA_TOKENS_FILE: ${path}: ${describeIssues(parsed.error)}`, ['FLOSTRA_TOKENS_FILE']);
  }
  return parsed.data.tokens;
}

function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Returns the dev tokens of `<dataDir>/dev-tokens.json`, generating the file (mode 0600) the
 * first time. Two processes starting at once agree on one file: it is written aside and
 * linked into place, which fails for the loser, who then reads the winner's.
 */
export async function ensureDevTokens(dataDir: string): Promise<DevTokens> {
  const path = join(dataDir, DEV_TOKENS_FILE_NAME);
  const existing = await readDevTokens(path);
  if (existing !== null) return existing;
  await mkdir(dataDir, { recursive: true });
  const fresh: DevTokens = { workspace: DEV_WORKSPACE, admin: newToken(), worker: newToken() };
  const scratch = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(scratch, `${JSON.stringify(fresh, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(scratch, path);
    return fresh;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(scratch);
  }
  const winner = await readDevTokens(path);
  if (winner === null) throw new ConfigError(`FLOSTRA_DATA_DIR: ${path} vanished while it was being created`, ['FLOSTRA_DATA_DIR']);
  return winner;
}

/** null when the file does not exist yet. */
async function readDevTokens(path: string): Promise<DevTokens | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ConfigError(`FLOSTRA_DATA_DIR: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`, [
      'FLOSTRA_DATA_DIR',
    ]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = devTokensFileSchema.safeParse(json);
  if (!parsed.success) {
    const why = json === undefined ? 'not valid JSON' : describeIssues(parsed.error);
    throw new ConfigError(`FLOSTRA_DATA_DIR: ${path}: ${why} (delete the file to generate new dev tokens)`, ['FLOSTRA_DATA_DIR']);
  }
  return parsed.data;
}

/** The grants behind the dev tokens: admin of the dev workspace + system-admin; worker. */
export function devTokenEntries(dev: DevTokens): TokenEntry[] {
  return [
    { token: dev.admin, subject: 'dev-admin', workspaces: { [dev.workspace]: 'admin' }, global: ['system-admin'] },
    { token: dev.worker, subject: 'dev-worker', workspaces: {}, global: ['worker'] },
  ];
}

export interface LoadedTokens {
  registry: TokenRegistry;
  /** Present when the tokens were generated for embedded mode: `npm start` prints them. */
  devTokens: DevTokens | null;
}

/**
 * Builds the TokenRegistry from FLOSTRA_TOKENS_FILE (reloadable from it), or in embedded mode
 * from the generated dev tokens. Outside embedded mode a tokens file is required, so a
 * production deployment never runs on tokens it did not choose.
 */
export async function loadTokens(config: AppConfig): Promise<LoadedTokens> {
  const file = config.tokensFile;
  if (file !== null) {
    const registry = new TokenRegistry(await readTokensFile(file), () => readTokensFile(file));
    return { registry, devTokens: null };
  }
  if (!isEmbedded(config)) {
    throw new ConfigError(
      'FLOSTRA_TOKENS_FILE: required when EVENT_STORE_URL or DATABASE_URL is set (dev tokens are generated in embedded mode only)',
      ['FLOSTRA_TOKENS_FILE'],
    );
  }
  const devTokens = await ensureDevTokens(config.dataDir);
  return { registry: new TokenRegistry(devTokenEntries(devTokens)), devTokens };
}
