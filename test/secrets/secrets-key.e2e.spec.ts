import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { client } from '../support/http-client.js';
import { EchoServer } from '../support/secrets/canary.js';
import { MAIN, runToExit, startEmbedded, type EmbeddedServer } from '../support/secrets/embedded.js';

/**
 * The secrets key as an operator meets it (docs/operations.md, "Secrets key and rotation"), on
 * the built server: the embedded key file, made once and kept; the rotation procedure (the new
 * key current with the old one previous, then the new key alone) with the values still usable
 * by workflows at every step; and the one-line refusals of a wrong or malformed key.
 */

const keyIdOf = (bytes: Buffer) => createHash('sha256').update(bytes).digest().subarray(0, 8).toString('hex');
const lines = (text: string) => text.split('\n').filter((line) => line !== '');

describe('the secrets key of npm start, and its rotation', () => {
  const echo = new EchoServer();
  let scratch: string;
  let dataDir: string;
  let fileKey: string;

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error('dist/src/main.js is missing: run `npm run build` (npm test does)');
    await echo.start();
    scratch = mkdtempSync(join(tmpdir(), 'flostra-secrets-key-'));
    dataDir = join(scratch, 'data');
  });
  afterAll(async () => {
    await echo.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** Runs a workflow whose http node sends secret API in a header; the upstream must get `expected`. */
  async function useSecret(server: EmbeddedServer, expected: string): Promise<void> {
    const { workspace, admin } = JSON.parse(readFileSync(join(dataDir, 'dev-tokens.json'), 'utf8')) as { workspace: string; admin: string };
    const api = client(server.url);
    const graph = {
      nodes: [{ id: 'call', type: 'http', config: { method: 'POST', url: `${echo.origin}/ok`, headers: { 'X-Key': '{{secret:API}}' } } }],
    };
    expect([200, 201]).toContain(
      (await api.put(`/v1/workspaces/${workspace}/workflows/uses-secret`, { token: admin, body: graph })).status,
    );
    const started = await api.post(`/v1/workspaces/${workspace}/workflows/uses-secret/executions`, { token: admin, body: {} });
    expect(started.status).toBe(201);
    const view = await eventually(
      async () => {
        const body = (await api.get(`/v1/executions/${started.body.executionId}`, { token: admin })).body;
        return ['succeeded', 'failed'].includes(body.status) ? body : false;
      },
      { what: 'the execution to end', timeoutMs: 60_000 },
    );
    expect(view.status).toBe('succeeded');
    expect(echo.requests.at(-1)!.headers['x-key']).toBe(expected);
  }

  it('makes a key file of mode 0600 on the first start, names it in the banner, and uses it ever after', async () => {
    const first = await startEmbedded(dataDir);
    try {
      const path = join(dataDir, 'secrets.key');
      expect(first.output()).toContain(`Secrets are encrypted with the key in ${path}`);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      fileKey = readFileSync(path, 'utf8').trim();
      expect(Buffer.from(fileKey, 'base64')).toHaveLength(32);
      expect(first.output()).not.toContain(fileKey);
      const { workspace, admin } = JSON.parse(readFileSync(join(dataDir, 'dev-tokens.json'), 'utf8')) as {
        workspace: string;
        admin: string;
      };
      const put = await client(first.url).put(`/v1/workspaces/${workspace}/secrets/API`, {
        token: admin,
        body: { value: 'the first value' },
      });
      expect(put.status).toBe(201);
      await useSecret(first, 'the first value');
    } finally {
      await first.stop();
    }
    const again = await startEmbedded(dataDir);
    try {
      expect(readFileSync(join(dataDir, 'secrets.key'), 'utf8').trim()).toBe(fileKey);
      await useSecret(again, 'the first value');
    } finally {
      await again.stop();
    }
  }, 180_000);

  it('rotates: the new key with the old one previous re-encrypts every value before serving; then the new key alone', async () => {
    const next = randomBytes(32);
    const rotating = await startEmbedded(dataDir, {
      FLOSTRA_SECRETS_KEY: next.toString('hex'),
      FLOSTRA_SECRETS_PREVIOUS_KEYS: fileKey,
      LOG_LEVEL: 'debug',
    });
    try {
      expect(rotating.output()).toMatch(/"msg":"secrets re-encrypted under the current key".*"resealed":1,"remainingUnderOtherKeys":0/);
      expect(rotating.output()).toContain(`"keyId":"${keyIdOf(next)}"`);
      expect(rotating.output()).not.toContain('Secrets are encrypted with the key in');
      await useSecret(rotating, 'the first value');
    } finally {
      await rotating.stop();
    }

    const rotated = await startEmbedded(dataDir, { FLOSTRA_SECRETS_KEY: next.toString('base64') });
    try {
      await useSecret(rotated, 'the first value');
    } finally {
      await rotated.stop();
    }

    // Neither another key nor the old file's key alone can read what is stored now: each says so in one line.
    const other = randomBytes(32);
    const wrong = await runToExit(dataDir, { FLOSTRA_SECRETS_KEY: other.toString('hex') });
    expect(wrong.code).toBe(2);
    expect(lines(wrong.stderr)).toEqual([
      `flostra: invalid configuration: FLOSTRA_SECRETS_KEY: 1 stored secret values are encrypted under key ${keyIdOf(next)}, which neither FLOSTRA_SECRETS_KEY (key ${keyIdOf(other)}) nor FLOSTRA_SECRETS_PREVIOUS_KEYS holds; add the key they were written with to FLOSTRA_SECRETS_PREVIOUS_KEYS`,
    ]);
    const fileAlone = await runToExit(dataDir);
    expect(fileAlone.code).toBe(2);
    expect(lines(fileAlone.stderr)).toHaveLength(1);
    expect(fileAlone.stderr).toContain(`which neither the key file ${join(dataDir, 'secrets.key')}`);
  }, 180_000);

  it('refuses a malformed key in one line that does not show it, and never replaces a key file that holds no key', async () => {
    const malformed = await runToExit(join(scratch, 'other'), { FLOSTRA_SECRETS_KEY: 'hunter2-is-not-a-key' });
    expect(malformed.code).toBe(2);
    expect(lines(malformed.stderr)).toEqual([
      'flostra: invalid configuration: FLOSTRA_SECRETS_KEY: expected 32 bytes written as base64 (44 characters) or hex (64 characters), got a value not shown here',
    ]);

    const damaged = join(scratch, 'damaged');
    mkdirSync(damaged);
    writeFileSync(join(damaged, 'secrets.key'), 'not a key\n', { mode: 0o600 });
    const refused = await runToExit(damaged);
    expect(refused.code).toBe(2);
    expect(lines(refused.stderr)).toEqual([
      `flostra: invalid configuration: FLOSTRA_DATA_DIR: ${join(damaged, 'secrets.key')} does not hold a 32-byte key (base64 or hex); restore it from a backup: without it the stored secrets cannot be read, and it is never replaced`,
    ]);
    expect(readFileSync(join(damaged, 'secrets.key'), 'utf8')).toBe('not a key\n');
  }, 120_000);
});
