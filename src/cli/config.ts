import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { usageError } from './errors.js';

/** Where `npm start` listens by default (HOST and PORT in README's configuration table). */
export const DEFAULT_URL = 'http://127.0.0.1:3000';
/** The workspace of `npm start`'s dev tokens. */
export const DEFAULT_WORKSPACE = 'dev';

export const SETTING_KEYS = ['url', 'token', 'workspace'] as const;
export type SettingKey = (typeof SETTING_KEYS)[number];

export type ConfigFile = Partial<Record<SettingKey, string>>;

export type Source = 'flag' | 'env' | 'config' | 'default';

export interface Settings {
  url: string;
  token: string | null;
  workspace: string;
  /** Where each setting came from (`flostra config show`). */
  sources: Record<SettingKey, Source | null>;
  configPath: string;
}

/** The flags that name settings; each wins over everything else. */
export interface SettingFlags {
  url?: string;
  token?: string;
  workspace?: string;
  config?: string;
}

const ENV_NAMES: Record<SettingKey, string> = { url: 'FLOSTRA_URL', token: 'FLOSTRA_TOKEN', workspace: 'FLOSTRA_WORKSPACE' };

/** `--config`, else FLOSTRA_CONFIG, else $XDG_CONFIG_HOME/flostra/config.json, else ~/.config/flostra/config.json. */
export function configPath(flags: SettingFlags, env: NodeJS.ProcessEnv): string {
  if (flags.config) return flags.config;
  if (env.FLOSTRA_CONFIG) return env.FLOSTRA_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'flostra', 'config.json');
}

export function isSettingKey(key: string): key is SettingKey {
  return (SETTING_KEYS as readonly string[]).includes(key);
}

/** The config file's settings; none when it does not exist. A file that is not a JSON object is a usage error. */
export function readConfigFile(path: string): ConfigFile {
  if (!existsSync(path)) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw usageError(`config file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw usageError(`config file ${path} must hold a JSON object`);
  const file: ConfigFile = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!isSettingKey(key)) continue;
    if (typeof value !== 'string') throw usageError(`config file ${path}: "${key}" must be a string`);
    file[key] = value;
  }
  return file;
}

/** Writes the settings readable by the user only (it may hold a token), replacing the file at once. */
export function writeConfigFile(path: string, file: ConfigFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

/**
 * The settings in force. Precedence, highest first: the flag (`--url`, `--token`,
 * `--workspace`), the environment (FLOSTRA_URL, FLOSTRA_TOKEN, FLOSTRA_WORKSPACE), the config
 * file, the default. An empty value counts as absent.
 */
export function resolveSettings(flags: SettingFlags, env: NodeJS.ProcessEnv, file: ConfigFile, path: string): Settings {
  const defaults: Record<SettingKey, string | null> = { url: DEFAULT_URL, token: null, workspace: DEFAULT_WORKSPACE };
  const values = {} as Record<SettingKey, string | null>;
  const sources = {} as Record<SettingKey, Source | null>;
  for (const key of SETTING_KEYS) {
    const candidates: [Source, string | null | undefined][] = [
      ['flag', flags[key]],
      ['env', env[ENV_NAMES[key]]],
      ['config', file[key]],
      ['default', defaults[key]],
    ];
    const found = candidates.find(([, value]) => value !== undefined && value !== null && value !== '');
    values[key] = found?.[1] ?? null;
    sources[key] = found?.[0] ?? null;
  }
  return {
    url: normalizeUrl(values.url ?? DEFAULT_URL),
    token: values.token,
    workspace: values.workspace ?? DEFAULT_WORKSPACE,
    sources,
    configPath: path,
  };
}

/** An absolute http(s) URL without a trailing slash; anything else is a usage error. */
export function normalizeUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usageError(`the server URL "${raw}" is not an absolute URL (e.g. ${DEFAULT_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError(`the server URL "${raw}" must be http or https`);
  return url.toString().replace(/\/+$/, '');
}
