import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { z } from 'zod';
import { ConfigError, isEmbedded, runsRole, type AppConfig, workerTransportOf } from '../config/config.js';
import type { Logger } from '../core/logger.js';
import { TokenRegistry } from './token-registry.js';
import { TokensReloader, type TokensSource } from './tokens-reloader.js';
import { devTokensFileSchema, tokensFileSchema, type DevTokens, type TokenEntry } from './tokens-file.schema.js';

export const DEV_WORKSPACE = 'dev';
export const DEV_TOKENS_FILE_NAME = 'dev-tokens.json';

function describeIssues(error: z.ZodError): string {
  // Paths and messages only: an issue must never echo a token back into a log.
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}

function parseJson(text: string, path: string, variable: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ConfigError(`${variable}: ${path} is not valid JSON`, [variable]);
  }
}

/** The grants of a FLOSTRA_TOKENS_FILE's text; any problem is a ConfigError naming it. */
export function parseTokensFile(text: string, path: string): TokenEntry[] {
  const parsed = tokensFileSchema.safeParse(parseJson(text, path, 'FLOSTRA_TOKENS_FILE'));
  if (!parsed.success) {
    throw new ConfigError(`FLOSTRA_TOKENS_FILE: ${path}: ${describeIssues(parsed.error)}`, ['FLOSTRA_TOKENS_FILE']);
  }
  return parsed.data.tokens;
}

/** FLOSTRA_TOKENS_FILE as a source the TokensReloader reads again. */
export function tokensFileSource(path: string): TokensSource {
  return { path, variable: 'FLOSTRA_TOKENS_FILE', parse: (text) => parseTokensFile(text, path) };
}

/** `<dataDir>/dev-tokens.json` as a source the TokensReloader reads again. */
export function devTokensSource(dataDir: string): TokensSource {
  const path = join(dataDir, DEV_TOKENS_FILE_NAME);
  return { path, variable: 'FLOSTRA_DATA_DIR', parse: (text) => devTokenEntries(parseDevTokens(text, path)) };
}

async function readText(path: string, variable: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`, [variable]);
  }
}

/** Reads and validates a FLOSTRA_TOKENS_FILE; any problem is a ConfigError naming it. */
export async function readTokensFile(path: string): Promise<TokenEntry[]> {
  return parseTokensFile(await readText(path, 'FLOSTRA_TOKENS_FILE'), path);
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
  return parseDevTokens(text, path);
}

function parseDevTokens(text: string, path: string): DevTokens {
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

/** The grants behind the dev tokens: admin of the dev workspace + system-admin; worker, and task-worker of the dev workspace. */
export function devTokenEntries(dev: DevTokens): TokenEntry[] {
  return [
    { token: dev.admin, subject: 'dev-admin', workspaces: { [dev.workspace]: 'admin' }, global: ['system-admin'] },
    { token: dev.worker, subject: 'dev-worker', workspaces: { [dev.workspace]: 'task-worker' }, global: ['worker'] },
  ];
}

export interface LoadedTokens {
  registry: TokenRegistry;
  /** Present when the tokens were generated for embedded mode: `npm start` prints them. */
  devTokens: DevTokens | null;
  /** Re-reads the file the grants came from (FLOSTRA_TOKENS_FILE, or the dev tokens file). */
  reloader: TokensReloader;
}

/**
 * Builds the TokenRegistry from FLOSTRA_TOKENS_FILE, or in embedded mode from the generated dev
 * tokens, with the TokensReloader that keeps it in step with that file. Outside embedded mode a
 * tokens file is required, so a production deployment never runs on tokens it did not choose.
 */
export async function loadTokens(config: AppConfig, logger: Logger): Promise<LoadedTokens> {
  const file = config.tokensFile;
  if (file !== null) {
    const text = await readText(file, 'FLOSTRA_TOKENS_FILE');
    const entries = parseTokensFile(text, file);
    const plaintext = entries.filter((entry) => entry.token !== undefined).length;
    if (plaintext > 0) {
      logger.warn('the tokens file holds plaintext tokens: give them as "tokenSha256" digests instead', {
        component: 'auth',
        file,
        plaintext,
        tokens: entries.length,
      });
    }
    const registry = new TokenRegistry(entries);
    return {
      registry,
      devTokens: null,
      reloader: new TokensReloader(registry, tokensFileSource(file), logger, text, { maxDelayMs: config.tokensReloadMaxDelayMs }),
    };
  }
  if (!isEmbedded(config)) {
    throw new ConfigError(
      'FLOSTRA_TOKENS_FILE: required when EVENT_STORE_URL or DATABASE_URL is set (dev tokens are generated in embedded mode only)',
      ['FLOSTRA_TOKENS_FILE'],
    );
  }
  const devTokens = await ensureDevTokens(config.dataDir);
  const registry = new TokenRegistry(devTokenEntries(devTokens));
  return {
    registry,
    devTokens,
    reloader: new TokensReloader(registry, devTokensSource(config.dataDir), logger, null, {
      maxDelayMs: config.tokensReloadMaxDelayMs,
    }),
  };
}

/**
 * The bearer token of this process's own worker role. FLOSTRA_WORKER_TOKEN when set; else the
 * dev worker token, which exists only in embedded mode without a tokens file. Anything else is
 * a ConfigError that says what is missing, checked before anything is opened.
 */
export function workerTokenOf(config: AppConfig, tokens: LoadedTokens): string {
  if (config.workerToken !== null) {
    // The worker calls this very process: a token its registry refuses would fail every claim.
    const callsThisProcess = workerTransportOf(config) === 'in-process' || (config.apiUrl === null && runsRole(config, 'api'));
    if (callsThisProcess && !tokens.registry.authenticate(config.workerToken)?.global.has('worker')) {
      const where = config.tokensFile !== null ? `FLOSTRA_TOKENS_FILE (${config.tokensFile})` : 'the dev tokens';
      throw new ConfigError(`FLOSTRA_WORKER_TOKEN: not a token with the global worker role in ${where}`, ['FLOSTRA_WORKER_TOKEN']);
    }
    return config.workerToken;
  }
  if (tokens.devTokens !== null) return tokens.devTokens.worker;
  const file = config.tokensFile ?? '(none)';
  throw new ConfigError(
    `FLOSTRA_WORKER_TOKEN: the worker role needs a bearer token with the global worker role. FLOSTRA_TOKENS_FILE (${file}) is set, ` +
      'so no dev worker token is generated: set FLOSTRA_WORKER_TOKEN to a token of that file with "global": ["worker"] ' +
      '(add one if it has none), or leave worker out of FLOSTRA_ROLES',
    ['FLOSTRA_WORKER_TOKEN', 'FLOSTRA_TOKENS_FILE'],
  );
}
