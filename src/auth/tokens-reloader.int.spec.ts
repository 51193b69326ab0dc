import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { appendFile, mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../../test/support/eventually.js';
import { loadConfig } from '../config/config.js';
import { createLogger } from '../core/logger.js';
import { loadTokens, type LoadedTokens } from './tokens.loader.js';

/**
 * The watch of the tokens file, against the real file system: each way an operator or a tool
 * changes the file (rewrite in place, replace by rename, a symlinked file, a Kubernetes-style
 * symlink switch) reaches the registry without a reload being asked for; an invalid file does not.
 */

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

let dir: string;
let records: Record<string, unknown>[];
let loaded: LoadedTokens | null = null;

const grants = (...subjects: ('alice' | 'bob')[]) =>
  JSON.stringify({
    tokens: subjects.map((subject) => ({ token: subject === 'alice' ? ALICE : BOB, subject, workspaces: { acme: 'viewer' } })),
  });

async function watched(path: string): Promise<LoadedTokens> {
  const logger = createLogger({ level: 'debug', write: (line) => records.push(JSON.parse(line)) });
  loaded = await loadTokens(loadConfig({ FLOSTRA_TOKENS_FILE: path }), logger);
  loaded.reloader.watch();
  return loaded;
}

/** Writes aside, then renames over `path`: how most tools replace a file atomically. */
async function replace(path: string, text: string): Promise<void> {
  const aside = `${path}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(aside, text);
  await rename(aside, path);
}

/** Writes `path` over and over until stopped: a busy log beside the file, or a tool that keeps touching it. */
function keepWriting(path: string, write: (path: string) => Promise<void>): { writes: () => number; stop: () => Promise<void> } {
  let writes = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await write(path);
      writes++;
    }
  })();
  return {
    writes: () => writes,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flostra-watch-'));
  records = [];
});
afterEach(async () => {
  loaded?.reloader.close();
  loaded = null;
  await rm(dir, { recursive: true, force: true });
});

describe('the watched tokens file', () => {
  it('applies a rewrite in place', async () => {
    const path = join(dir, 'tokens.json');
    await writeFile(path, grants('alice', 'bob'));
    const { registry } = await watched(path);
    await writeFile(path, grants('alice'));
    await eventually(() => registry.authenticate(BOB) === null, 'bob to be revoked');
    expect(registry.authenticate(ALICE)).not.toBeNull();
  });

  it('applies a file replaced by rename, and the next replacement too', async () => {
    const path = join(dir, 'tokens.json');
    await writeFile(path, grants('alice', 'bob'));
    const { registry } = await watched(path);
    await replace(path, grants('alice'));
    await eventually(() => registry.authenticate(BOB) === null, 'bob to be revoked');
    await replace(path, grants('bob'));
    await eventually(() => registry.authenticate(ALICE) === null && registry.authenticate(BOB) !== null, 'alice out, bob back');
    // And an edit in place of the file that replaced the first one.
    await writeFile(path, grants('alice', 'bob'));
    await eventually(() => registry.authenticate(ALICE) !== null, 'alice back');
  });

  it('applies edits of a symlinked file that lives elsewhere, also after it was replaced', async () => {
    const elsewhere = join(dir, 'secrets');
    await mkdir(elsewhere);
    await writeFile(join(elsewhere, 'tokens.json'), grants('alice', 'bob'));
    const config = join(dir, 'config');
    await mkdir(config);
    await symlink(join(elsewhere, 'tokens.json'), join(config, 'tokens.json'));
    const { registry } = await watched(join(config, 'tokens.json'));
    await writeFile(join(elsewhere, 'tokens.json'), grants('bob'));
    await eventually(() => registry.authenticate(ALICE) === null, 'alice to be revoked');
    // Replaced by rename over there, then edited in place: the watch follows the new file.
    await replace(join(elsewhere, 'tokens.json'), grants('alice', 'bob'));
    await eventually(() => registry.authenticate(ALICE) !== null, 'alice back');
    await writeFile(join(elsewhere, 'tokens.json'), grants('alice'));
    await eventually(() => registry.authenticate(BOB) === null, 'bob to be revoked');
  });

  it('applies a Kubernetes-style switch of the symlinked data directory', async () => {
    // tokens.json -> ..data/tokens.json, ..data -> ..v1; an update writes ..v2 and renames a new
    // ..data link over the old one: the file's own name never appears in the events.
    const mount = join(dir, 'mount');
    await mkdir(join(mount, '..v1'), { recursive: true });
    await writeFile(join(mount, '..v1', 'tokens.json'), grants('alice', 'bob'));
    await symlink('..v1', join(mount, '..data'));
    await symlink(join('..data', 'tokens.json'), join(mount, 'tokens.json'));
    const { registry } = await watched(join(mount, 'tokens.json'));
    await mkdir(join(mount, '..v2'));
    await writeFile(join(mount, '..v2', 'tokens.json'), grants('alice'));
    await symlink('..v2', join(mount, '..data_tmp'));
    await rename(join(mount, '..data_tmp'), join(mount, '..data'));
    await eventually(() => registry.authenticate(BOB) === null, 'bob to be revoked');
  });

  it('refuses an invalid file it sees, keeping the grants, then applies the next valid one', async () => {
    const path = join(dir, 'tokens.json');
    await writeFile(path, grants('alice', 'bob'));
    const { registry } = await watched(path);
    await replace(
      path,
      JSON.stringify({
        tokens: [
          { token: ALICE, subject: 'a' },
          { token: ALICE, subject: 'b' },
        ],
      }),
    );
    const refusal = await eventually(() => records.find((r) => r.level === 'error') ?? false, 'the refusal to be logged');
    expect(refusal).toMatchObject({ msg: 'tokens file refused; the previous grants stay in force', trigger: 'change' });
    expect(refusal.problem).toContain('the same token appears twice');
    expect(registry.authenticate(BOB)).not.toBeNull();
    expect(JSON.stringify(records)).not.toContain(ALICE);
    await writeFile(path, grants('alice'));
    await eventually(() => registry.authenticate(BOB) === null, 'bob to be revoked');
    expect(records.filter((r) => r.level === 'error')).toHaveLength(1);
  });

  it('applies a removal while a file beside it is written all the time', async () => {
    const path = join(dir, 'tokens.json');
    await writeFile(path, grants('alice', 'bob'));
    const { registry } = await watched(path);
    const log = keepWriting(join(dir, 'app.log'), (file) => appendFile(file, 'a line of a busy log\n'));
    try {
      await eventually(() => log.writes() > 100, 'the log to be busy');
      await writeFile(path, grants('alice'));
      const before = log.writes();
      // Bounded only as a failing test: the read must not wait for the directory to fall quiet.
      await eventually(() => registry.authenticate(BOB) === null, { what: 'bob to be revoked', timeoutMs: 10_000 });
      expect(log.writes()).toBeGreaterThan(before);
      expect(registry.authenticate(ALICE)).not.toBeNull();
    } finally {
      await log.stop();
    }
  });

  it('applies a removal while the tokens file itself keeps being rewritten', async () => {
    const path = join(dir, 'tokens.json');
    await writeFile(path, grants('alice', 'bob'));
    const { registry } = await watched(path);
    const rewrites = keepWriting(path, (file) => writeFile(file, grants('alice')));
    try {
      await eventually(() => registry.authenticate(BOB) === null, { what: 'bob to be revoked', timeoutMs: 10_000 });
      expect(registry.authenticate(ALICE)).not.toBeNull();
    } finally {
      await rewrites.stop();
    }
  });
});
