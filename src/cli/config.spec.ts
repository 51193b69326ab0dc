import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configPath, DEFAULT_URL, readConfigFile, resolveSettings, writeConfigFile } from './config.js';
import { CliError, EXIT } from './errors.js';

describe('settings precedence: flag, then environment, then config file, then default', () => {
  const file = { url: 'http://127.0.0.1:4001', token: 'file-token', workspace: 'from-file' };
  const env = { FLOSTRA_URL: 'http://127.0.0.1:4002', FLOSTRA_TOKEN: 'env-token', FLOSTRA_WORKSPACE: 'from-env' };
  const flags = { url: 'http://127.0.0.1:4003/', token: 'flag-token', workspace: 'from-flag' };

  it('takes each setting from the flag over everything else', () => {
    const s = resolveSettings(flags, env, file, '/x');
    expect([s.url, s.token, s.workspace]).toEqual(['http://127.0.0.1:4003', 'flag-token', 'from-flag']);
    expect(s.sources).toEqual({ url: 'flag', token: 'flag', workspace: 'flag' });
  });

  it('takes the environment over the config file', () => {
    const s = resolveSettings({}, env, file, '/x');
    expect([s.url, s.token, s.workspace]).toEqual(['http://127.0.0.1:4002', 'env-token', 'from-env']);
  });

  it('takes the config file over the defaults, setting by setting', () => {
    const s = resolveSettings({ workspace: 'from-flag' }, { FLOSTRA_TOKEN: 'env-token' }, file, '/x');
    expect([s.url, s.token, s.workspace]).toEqual(['http://127.0.0.1:4001', 'env-token', 'from-flag']);
    expect(s.sources).toEqual({ url: 'config', token: 'env', workspace: 'flag' });
  });

  it("defaults to npm start's address and the dev workspace, without a token", () => {
    const s = resolveSettings({}, {}, {}, '/x');
    expect([s.url, s.token, s.workspace]).toEqual([DEFAULT_URL, null, 'dev']);
    expect(s.sources.token).toBeNull();
  });

  it('counts an empty value as absent', () => {
    const s = resolveSettings({}, { FLOSTRA_TOKEN: '', FLOSTRA_URL: '' }, file, '/x');
    expect([s.url, s.token]).toEqual(['http://127.0.0.1:4001', 'file-token']);
  });

  it('refuses a URL that is not absolute http(s) as a usage error', () => {
    for (const url of ['localhost:3000', 'ftp://127.0.0.1/']) {
      const attempt = () => resolveSettings({ url }, {}, {}, '/x');
      expect(attempt).toThrow(CliError);
      expect(attempt).toThrow(expect.objectContaining({ exitCode: EXIT.usage }));
    }
  });
});

describe('the config file', () => {
  let dir: string | null = null;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = null;
  });

  it('is --config, else FLOSTRA_CONFIG, else under XDG_CONFIG_HOME, else under ~/.config', () => {
    expect(configPath({ config: '/a.json' }, { FLOSTRA_CONFIG: '/b.json' })).toBe('/a.json');
    expect(configPath({}, { FLOSTRA_CONFIG: '/b.json', XDG_CONFIG_HOME: '/xdg' })).toBe('/b.json');
    expect(configPath({}, { XDG_CONFIG_HOME: '/xdg', HOME: '/home/u' })).toBe('/xdg/flostra/config.json');
    expect(configPath({}, { HOME: '/home/u' })).toBe('/home/u/.config/flostra/config.json');
  });

  it('is written readable by its owner only, and read back', () => {
    dir = mkdtempSync(join(tmpdir(), 'flostra-config-'));
    const path = join(dir, 'nested', 'config.json');
    writeConfigFile(path, { token: 'secret', url: 'http://127.0.0.1:3000' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readConfigFile(path)).toEqual({ token: 'secret', url: 'http://127.0.0.1:3000' });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ token: 'secret', url: 'http://127.0.0.1:3000' });
  });

  it('may be missing: no settings', () => {
    expect(readConfigFile('/nonexistent/flostra/config.json')).toEqual({});
  });

  it('must be a JSON object of strings, else a usage error naming the file', () => {
    dir = mkdtempSync(join(tmpdir(), 'flostra-config-'));
    const path = join(dir, 'config.json');
    for (const text of ['{ not json', '[1]', '{"token": 12}']) {
      writeFileSync(path, text);
      expect(() => readConfigFile(path)).toThrow(expect.objectContaining({ exitCode: EXIT.usage, message: expect.stringContaining(path) }));
    }
  });
});
