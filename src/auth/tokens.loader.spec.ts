import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config/config.js';
import { ensureDevTokens, loadTokens, readTokensFile } from './tokens.loader.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flostra-tokens-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const ADMIN = 'a'.repeat(40);

async function writeTokens(content: unknown): Promise<string> {
  const path = join(dir, 'tokens.json');
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

async function rejection(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('dev tokens in embedded mode', () => {
  it('are generated once into <data dir>/dev-tokens.json, readable by the owner only', async () => {
    const dataDir = join(dir, 'data');
    const { registry, devTokens } = await loadTokens(loadConfig({ FLOSTRA_DATA_DIR: dataDir }));
    const path = join(dataDir, 'dev-tokens.json');
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(devTokens);
    expect(devTokens!.workspace).toBe('dev');
    expect(devTokens!.admin).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(devTokens!.worker).not.toBe(devTokens!.admin);
    expect((await stat(path)).mode & 0o777).toBe(0o600);

    const admin = registry.authenticate(devTokens!.admin)!;
    expect(admin.workspaces.get('dev')).toBe('admin');
    expect([...admin.global]).toEqual(['system-admin']);
    const worker = registry.authenticate(devTokens!.worker)!;
    expect(worker.workspaces.size).toBe(0);
    expect([...worker.global]).toEqual(['worker']);
  });

  it('are reused on later starts', async () => {
    const first = await ensureDevTokens(dir);
    const second = await ensureDevTokens(dir);
    expect(second).toEqual(first);
  });

  it('agree on one file when two processes start at once', async () => {
    const all = await Promise.all([ensureDevTokens(dir), ensureDevTokens(dir), ensureDevTokens(dir)]);
    const onDisk = JSON.parse(await readFile(join(dir, 'dev-tokens.json'), 'utf8'));
    for (const tokens of all) expect(tokens).toEqual(onDisk);
  });

  it('refuse a damaged dev-tokens.json, naming FLOSTRA_DATA_DIR', async () => {
    await writeFile(join(dir, 'dev-tokens.json'), JSON.stringify({ workspace: 'dev', admin: 'short' }));
    const error = await rejection(ensureDevTokens(dir));
    expect(error.message).toMatch(/^FLOSTRA_DATA_DIR: .*dev-tokens\.json/);
  });

  it('are never generated outside embedded mode', async () => {
    const config = loadConfig({ FLOSTRA_DATA_DIR: dir, EVENT_STORE_URL: 'postgres://localhost/x' });
    const error = await rejection(loadTokens(config));
    expect(error.message).toMatch(/^FLOSTRA_TOKENS_FILE: required/);
  });
});

describe('FLOSTRA_TOKENS_FILE', () => {
  it('grants the roles it lists', async () => {
    const path = await writeTokens({
      tokens: [{ token: ADMIN, subject: 'alice', workspaces: { acme: 'editor', beta: 'viewer' }, global: [] }],
    });
    const { registry, devTokens } = await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path, FLOSTRA_DATA_DIR: dir }));
    expect(devTokens).toBeNull();
    const alice = registry.authenticate(ADMIN)!;
    expect(alice.subject).toBe('alice');
    expect(Object.fromEntries(alice.workspaces)).toEqual({ acme: 'editor', beta: 'viewer' });
  });

  it('is reloadable: a removed token stops authenticating', async () => {
    const path = await writeTokens({ tokens: [{ token: ADMIN, subject: 'alice', workspaces: {}, global: ['worker'] }] });
    const { registry } = await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path }));
    await writeTokens({ tokens: [] });
    await registry.reload();
    expect(registry.authenticate(ADMIN)).toBeNull();
  });

  it.each([
    ['an unknown key', { tokens: [{ token: ADMIN, subject: 's', workspaces: {}, global: [], admin: true }] }, 'tokens.0: Unrecognized key'],
    ['an unknown workspace role', { tokens: [{ token: ADMIN, subject: 's', workspaces: { acme: 'owner' } }] }, 'tokens.0.workspaces.acme'],
    ['an unknown global role', { tokens: [{ token: ADMIN, subject: 's', global: ['root'] }] }, 'tokens.0.global.0'],
    ['a short token', { tokens: [{ token: 'abc', subject: 's' }] }, 'tokens.0.token: a token must have at least 16 characters'],
    [
      'a duplicate token',
      {
        tokens: [
          { token: ADMIN, subject: 's' },
          { token: ADMIN, subject: 't' },
        ],
      },
      'tokens.1.token: the same token appears twice',
    ],
    ['a bad workspace id', { tokens: [{ token: ADMIN, subject: 's', workspaces: { 'a/b': 'admin' } }] }, 'tokens.0.workspaces'],
    ['no tokens array', { token: [] }, '(root)'],
  ])('rejects %s, naming the variable and the path', async (_what, content, fragment) => {
    const path = await writeTokens(content);
    const error = await rejection(readTokensFile(path));
    expect(error.message.startsWith(`FLOSTRA_TOKENS_FILE: ${path}: `)).toBe(true);
    expect(error.message).toContain(fragment);
    expect(error.message).not.toContain(ADMIN);
  });

  it('rejects a file that is not JSON', async () => {
    const error = await rejection(readTokensFile(await writeTokens('{ tokens: ')));
    expect(error.message).toMatch(/^FLOSTRA_TOKENS_FILE: .* is not valid JSON$/);
  });

  it('rejects a file that does not exist', async () => {
    const error = await rejection(readTokensFile(join(dir, 'missing.json')));
    expect(error.message).toContain('cannot read');
    expect(error.message).toContain('ENOENT');
  });
});
