import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { ConfigError, loadConfig } from '../config/config.js';
import { createLogger } from '../core/logger.js';
import { ensureDevTokens, loadTokens, readTokensFile, workerTokenOf } from './tokens.loader.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flostra-tokens-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const ADMIN = 'a'.repeat(40);
const WORKER = 'w'.repeat(40);
const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

/** A logger that keeps its records. */
function recorder() {
  const records: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => records.push(JSON.parse(line)) });
  return { logger, records, text: () => records.map((r) => JSON.stringify(r)).join('\n') };
}
const quiet = createLogger({ level: 'silent' });

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
    const { registry, devTokens } = await loadTokens(loadConfig({ FLOSTRA_DATA_DIR: dataDir }), quiet);
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
    expect([...worker.workspaces]).toEqual([['dev', 'task-worker']]);
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
    const error = await rejection(loadTokens(config, quiet));
    expect(error.message).toMatch(/^FLOSTRA_TOKENS_FILE: required/);
  });
});

describe('FLOSTRA_TOKENS_FILE', () => {
  it('grants the roles it lists', async () => {
    const path = await writeTokens({
      tokens: [{ token: ADMIN, subject: 'alice', workspaces: { acme: 'editor', beta: 'viewer' }, global: [] }],
    });
    const { registry, devTokens } = await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path, FLOSTRA_DATA_DIR: dir }), quiet);
    expect(devTokens).toBeNull();
    const alice = registry.authenticate(ADMIN)!;
    expect(alice.subject).toBe('alice');
    expect(Object.fromEntries(alice.workspaces)).toEqual({ acme: 'editor', beta: 'viewer' });
  });

  it('is reloadable: a removed token stops authenticating', async () => {
    const path = await writeTokens({ tokens: [{ token: ADMIN, subject: 'alice', workspaces: {}, global: ['worker'] }] });
    const { registry, reloader } = await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path }), quiet);
    await writeTokens({ tokens: [] });
    expect((await reloader.reload('SIGHUP')).status).toBe('applied');
    expect(registry.authenticate(ADMIN)).toBeNull();
  });

  it('accepts tokens given as their SHA-256 digest, in either case of hex', async () => {
    const path = await writeTokens({
      tokens: [
        { tokenSha256: sha256(ADMIN).toUpperCase(), subject: 'alice', workspaces: { acme: 'admin' } },
        { token: WORKER, subject: 'pool', global: ['worker'] },
      ],
    });
    const entries = await readTokensFile(path);
    expect(entries[0]).toEqual({ tokenSha256: sha256(ADMIN), subject: 'alice', workspaces: { acme: 'admin' }, global: [] });
    const { registry } = await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path }), quiet);
    expect(registry.authenticate(ADMIN)?.subject).toBe('alice');
    expect(registry.authenticate(WORKER)?.subject).toBe('pool');
  });

  it('warns once at start how many entries are plaintext, never naming a token', async () => {
    const path = await writeTokens({
      tokens: [
        { token: ADMIN, subject: 'alice' },
        { token: WORKER, subject: 'pool', global: ['worker'] },
        { tokenSha256: sha256('c'.repeat(40)), subject: 'carol' },
      ],
    });
    const log = recorder();
    await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path }), log.logger);
    expect(log.records).toEqual([expect.objectContaining({ level: 'warn', plaintext: 2, tokens: 3, file: path })]);
    expect(log.records[0].msg).toContain('tokenSha256');
    expect(log.text()).not.toContain(ADMIN);
    expect(log.text()).not.toContain(WORKER);
  });

  it('does not warn about a file of digests only', async () => {
    const path = await writeTokens({ tokens: [{ tokenSha256: sha256(ADMIN), subject: 'alice' }] });
    const log = recorder();
    await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path }), log.logger);
    expect(log.records).toEqual([]);
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
      'tokens.1.token: the same token appears twice (also in tokens.0)',
    ],
    [
      'a token given twice, once as its digest',
      {
        tokens: [
          { token: ADMIN, subject: 's' },
          { tokenSha256: sha256(ADMIN), subject: 't' },
        ],
      },
      'tokens.1.tokenSha256: the same token appears twice (also in tokens.0)',
    ],
    [
      'a digest given twice',
      {
        tokens: [
          { tokenSha256: sha256(ADMIN), subject: 's' },
          { tokenSha256: sha256(ADMIN).toUpperCase(), subject: 't' },
        ],
      },
      'tokens.1.tokenSha256: the same token appears twice',
    ],
    [
      'both a token and a digest',
      { tokens: [{ token: ADMIN, tokenSha256: sha256(ADMIN), subject: 's' }] },
      'exactly one of "token" and "tokenSha256"',
    ],
    ['neither a token nor a digest', { tokens: [{ subject: 's' }] }, 'tokens.0: an entry needs exactly one of "token" and "tokenSha256"'],
    [
      'a digest that is not 64 hex digits',
      { tokens: [{ tokenSha256: 'abc', subject: 's' }] },
      'tokens.0.tokenSha256: expected the 64 hexadecimal',
    ],
    ['a bad workspace id', { tokens: [{ token: ADMIN, subject: 's', workspaces: { 'a/b': 'admin' } }] }, 'tokens.0.workspaces'],
    ['no tokens array', { token: [] }, '(root)'],
  ])('rejects %s, naming the variable and the path', async (_what, content, fragment) => {
    const path = await writeTokens(content);
    const error = await rejection(readTokensFile(path));
    expect(error.message.startsWith(`FLOSTRA_TOKENS_FILE: ${path}: `)).toBe(true);
    expect(error.message).toContain(fragment);
    expect(error.message).not.toContain(ADMIN);
    expect(error.message).not.toContain(sha256(ADMIN));
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

describe("the worker role's token", () => {
  async function loaded(env: Record<string, string>, tokens: unknown[]) {
    const path = await writeTokens({ tokens });
    const config = loadConfig({ FLOSTRA_DATA_DIR: dir, FLOSTRA_TOKENS_FILE: path, ...env });
    return { config, tokens: await loadTokens(config, quiet), path };
  }

  it('is the dev worker token in embedded mode without a tokens file', async () => {
    const config = loadConfig({ FLOSTRA_DATA_DIR: dir });
    const tokens = await loadTokens(config, quiet);
    expect(workerTokenOf(config, tokens)).toBe(tokens.devTokens!.worker);
  });

  it('says what is missing when a tokens file is set, even in embedded mode', async () => {
    const { config, tokens, path } = await loaded({}, [{ token: ADMIN, subject: 'alice', workspaces: { acme: 'admin' } }]);
    let error: unknown;
    try {
      workerTokenOf(config, tokens);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toMatch(/^FLOSTRA_WORKER_TOKEN: /);
    expect(message).toContain(`FLOSTRA_TOKENS_FILE (${path}) is set, so no dev worker token is generated`);
    expect(message).toContain('"global": ["worker"]');
    expect(message).not.toContain('outside embedded mode');
    expect((error as ConfigError).variables).toEqual(['FLOSTRA_WORKER_TOKEN', 'FLOSTRA_TOKENS_FILE']);
  });

  it('is FLOSTRA_WORKER_TOKEN when the tokens file grants it the worker role, also as a digest', async () => {
    const { config, tokens } = await loaded({ FLOSTRA_WORKER_TOKEN: WORKER }, [
      { tokenSha256: sha256(WORKER), subject: 'pool', global: ['worker'] },
    ]);
    expect(workerTokenOf(config, tokens)).toBe(WORKER);
  });

  it('refuses a FLOSTRA_WORKER_TOKEN this process would refuse, without echoing it', async () => {
    const { config, tokens } = await loaded({ FLOSTRA_WORKER_TOKEN: ADMIN }, [
      { token: ADMIN, subject: 'alice', workspaces: { acme: 'admin' } },
    ]);
    expect(() => workerTokenOf(config, tokens)).toThrow(
      /^FLOSTRA_WORKER_TOKEN: not a token with the global worker role in FLOSTRA_TOKENS_FILE/,
    );
    expect(() => workerTokenOf(config, tokens)).not.toThrow(ADMIN);
  });

  it('is not checked against this process when the worker calls another api', async () => {
    const { config, tokens } = await loaded({ FLOSTRA_WORKER_TOKEN: WORKER, FLOSTRA_API_URL: 'http://127.0.0.1:1' }, [
      { token: ADMIN, subject: 'alice' },
    ]);
    expect(workerTokenOf(config, tokens)).toBe(WORKER);
  });
});
