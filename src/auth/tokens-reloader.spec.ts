import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config/config.js';
import { createLogger } from '../core/logger.js';
import type { TokenRegistry } from './token-registry.js';
import type { TokensReloader } from './tokens-reloader.js';
import { loadTokens } from './tokens.loader.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const CAROL = 'carol-token-0123456789';
const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

let dir: string;
let path: string;
let records: Record<string, unknown>[];
let registry: TokenRegistry;
let reloader: TokensReloader;
let changes: number;

async function write(content: unknown): Promise<void> {
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
}

const grants = {
  tokens: [
    { token: ALICE, subject: 'alice', workspaces: { acme: 'admin' } },
    { tokenSha256: sha256(BOB), subject: 'bob', workspaces: { acme: 'viewer' } },
  ],
};

/** Every record but the start-up warning about plaintext tokens, as written. */
const logged = () => records.filter((r) => r.level !== 'warn');
const logText = () => JSON.stringify(records);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flostra-reload-'));
  path = join(dir, 'tokens.json');
  await write(grants);
  records = [];
  const logger = createLogger({ level: 'debug', write: (line) => records.push(JSON.parse(line)) });
  ({ registry, reloader } = await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path }), logger));
  changes = 0;
  registry.onChange(() => changes++);
});
afterEach(async () => {
  reloader.close();
  await rm(dir, { recursive: true, force: true });
});

describe('reloading the tokens file', () => {
  it('applies a valid change, logging counts only', async () => {
    await write({
      tokens: [
        { token: ALICE, subject: 'alice', workspaces: { acme: 'viewer' } },
        { tokenSha256: sha256(CAROL), subject: 'carol', global: ['worker'] },
      ],
    });
    const outcome = await reloader.reload('SIGHUP');
    expect(outcome).toEqual({ status: 'applied', tokens: 2, added: 1, removed: 1, changed: 1, plaintext: 1 });
    expect(registry.authenticate(BOB)).toBeNull();
    expect(registry.authenticate(ALICE)?.workspaces.get('acme')).toBe('viewer');
    expect(registry.authenticate(CAROL)?.subject).toBe('carol');
    expect(changes).toBe(1);
    expect(logged()).toEqual([
      expect.objectContaining({
        level: 'info',
        component: 'auth',
        file: path,
        trigger: 'SIGHUP',
        tokens: 2,
        added: 1,
        removed: 1,
        changed: 1,
        plaintext: 1,
      }),
    ]);
    for (const secret of [ALICE, BOB, CAROL, sha256(BOB), sha256(CAROL)]) expect(logText()).not.toContain(secret);
  });

  it.each([
    ['not JSON', '{ "tokens": [', 'is not valid JSON'],
    [
      'a repeated token',
      { tokens: [...grants.tokens, { token: ALICE, subject: 'mallory', workspaces: { acme: 'admin' } }] },
      'tokens.2.token: the same token appears twice (also in tokens.0)',
    ],
    [
      'a repeated digest',
      { tokens: [...grants.tokens, { tokenSha256: sha256(BOB), subject: 'mallory' }] },
      'tokens.2.tokenSha256: the same token appears twice (also in tokens.1)',
    ],
    ['a token shorter than 16 characters', { tokens: [{ token: 'short', subject: 'x' }] }, 'at least 16 characters'],
    ['an unknown role', { tokens: [{ token: CAROL, subject: 'carol', workspaces: { acme: 'owner' } }] }, 'tokens.0.workspaces.acme'],
    ['an unknown field', { tokens: [{ token: CAROL, subject: 'carol', admin: true }] }, 'Unrecognized key'],
  ])('refuses %s with one log line naming the problem, and keeps the grants', async (_what, content, problem) => {
    await write(content);
    const outcome = await reloader.reload('change');
    expect(outcome).toEqual({ status: 'refused', problem: expect.stringContaining(problem) });
    expect(registry.authenticate(ALICE)?.workspaces.get('acme')).toBe('admin');
    expect(registry.authenticate(BOB)?.subject).toBe('bob');
    expect(registry.authenticate(CAROL)).toBeNull();
    expect(changes).toBe(0);
    expect(logged()).toEqual([
      expect.objectContaining({ level: 'error', msg: 'tokens file refused; the previous grants stay in force', file: path }),
    ]);
    expect(logged()[0].problem).toContain(problem);
    expect(logged()[0].problem).toMatch(/^FLOSTRA_TOKENS_FILE: /);
    for (const secret of [ALICE, BOB, sha256(BOB)]) expect(logText()).not.toContain(secret);
  });

  it('refuses a file that is gone, and keeps the grants', async () => {
    await unlink(path);
    expect(await reloader.reload('change')).toEqual({ status: 'refused', problem: expect.stringContaining('(ENOENT)') });
    expect(registry.authenticate(ALICE)).not.toBeNull();
  });

  it('tells a refused file once per change, but on every SIGHUP', async () => {
    await write('not json');
    expect((await reloader.reload('change')).status).toBe('refused');
    expect((await reloader.reload('change')).status).toBe('skipped');
    expect((await reloader.reload('SIGHUP')).status).toBe('refused');
    expect(logged().filter((r) => r.level === 'error')).toHaveLength(2);
  });

  it('answers a SIGHUP without a change at info, and a change event without one quietly', async () => {
    expect(await reloader.reload('change')).toEqual({ status: 'skipped' });
    expect(await reloader.reload('SIGHUP')).toEqual({ status: 'unchanged', tokens: 2 });
    await write({ tokens: [...grants.tokens].reverse() });
    expect(await reloader.reload('change')).toEqual({ status: 'unchanged', tokens: 2 });
    expect(changes).toBe(0);
    expect(logged().filter((r) => r.level !== 'debug')).toEqual([
      expect.objectContaining({ level: 'info', msg: 'tokens file re-read: the grants are unchanged', trigger: 'SIGHUP', tokens: 2 }),
    ]);
  });

  it('applies the file again after a refusal once it is valid', async () => {
    await write('not json');
    await reloader.reload('change');
    await write({ tokens: [grants.tokens[0]] });
    expect(await reloader.reload('change')).toMatchObject({ status: 'applied', removed: 1 });
    expect(registry.authenticate(BOB)).toBeNull();
  });

  it('applies reloads in the order they were asked for', async () => {
    await write({ tokens: [grants.tokens[0]] });
    const first = reloader.reload('SIGHUP');
    const second = reloader.reload('SIGHUP');
    expect((await first).status).toBe('applied');
    expect((await second).status).toBe('unchanged');
  });
});

describe('reloading the embedded dev tokens file', () => {
  it('follows dev-tokens.json, refusing a damaged one', async () => {
    const dataDir = join(dir, 'data');
    const dev = await loadTokens(loadConfig({ FLOSTRA_DATA_DIR: dataDir }), createLogger({ level: 'silent' }));
    const devPath = join(dataDir, 'dev-tokens.json');
    const admin = dev.devTokens!.admin;
    await writeFile(devPath, JSON.stringify({ ...dev.devTokens, admin: CAROL }));
    expect(await dev.reloader.reload('SIGHUP')).toMatchObject({ status: 'applied', added: 1, removed: 1 });
    expect(dev.registry.authenticate(admin)).toBeNull();
    expect(dev.registry.authenticate(CAROL)?.workspaces.get('dev')).toBe('admin');
    await writeFile(devPath, JSON.stringify({ workspace: 'dev', admin: 'short' }));
    expect(await dev.reloader.reload('SIGHUP')).toEqual({ status: 'refused', problem: expect.stringMatching(/^FLOSTRA_DATA_DIR: /) });
    expect(dev.registry.authenticate(CAROL)).not.toBeNull();
  });
});
