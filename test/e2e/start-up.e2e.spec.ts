import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What a person sees when `npm start` works and when it cannot: the built server run as
 * `node dist/src/main.js`, on loopback, with a temporary FLOSTRA_DATA_DIR. A failure is one or
 * two lines on stderr naming the cause, without a stack trace unless LOG_LEVEL=debug; a bad
 * configuration exits with 2, any other failure with 1.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const RUN_MS = 60_000;
const STACK_LINE = /^\s+at /m;

interface Run {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

let scratch: string;

/** The embedded default, whatever the outer environment says, plus `env`. */
function environment(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: '0', FLOSTRA_DATA_DIR: mkdtempSync(join(scratch, 'data-')) };
  for (const name of [
    'EVENT_STORE_URL',
    'DATABASE_URL',
    'KAFKA_BROKERS',
    'FLOSTRA_TOKENS_FILE',
    'FLOSTRA_ROLES',
    'FLOSTRA_API_URL',
    'FLOSTRA_WORKER_TOKEN',
    'LOG_LEVEL',
  ])
    delete base[name];
  return { ...base, ...env };
}

/** Runs the server until it exits by itself (a failed start), or fails the test after RUN_MS. */
function runToExit(env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: environment(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running after ${RUN_MS} ms\n--- stderr\n${stderr}\n--- stdout\n${stdout}`));
    }, RUN_MS);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

function occupiedPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address !== null ? address.port : 0 });
    });
  });
}

const lines = (text: string) => text.split('\n').filter((line) => line !== '');

describe('npm start, as a person sees it', () => {
  beforeAll(() => {
    // Cheap when dist/ is current; builds it otherwise, so this tests the sources it sits beside.
    const build = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    if (build.status !== 0)
      throw new Error(`build failed (${build.error?.message ?? `exit ${build.status}`}):\n${build.stderr}${build.stdout}`);
    scratch = mkdtempSync(join(tmpdir(), 'flostra-start-up-'));
  });

  afterAll(() => {
    rmSync(scratch, { recursive: true, force: true });
  });

  it('prints the banner first, and stops cleanly on SIGINT', async () => {
    const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: environment({}), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no banner within ${RUN_MS} ms\n${stderr}\n${stdout}`)), RUN_MS);
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        // The banner ends with the curl that reads an execution back.
        if (/\/v1\/executions\/<executionId>.*\n/.test(stdout)) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then(({ code }) => reject(new Error(`exited with ${code} before its banner\n${stderr}\n${stdout}`)));
    });
    const before = stdout.slice(0, stdout.indexOf('Flostra is listening on'));
    expect(lines(before)).toEqual([]);
    expect(stdout).toContain('Dev admin token');
    expect(stdout).toMatch(/curl -sS -X POST http:\/\/127\.0\.0\.1:\d+\/v1\/workspaces\/dev\/workflows\/demo\/executions/);

    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const { code, signal } = await exited;
    clearTimeout(timer);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stderr).toBe('');
  });

  it('says which variable is wrong in one line, and exits with 2', async () => {
    const run = await runToExit({ PORT: 'abc' });
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toEqual([expect.stringMatching(/^flostra: invalid configuration: PORT: .*"abc"/)]);
    expect(run.stdout).toBe('');
  });

  it('names every variable a worker-only process is missing, and exits with 2', async () => {
    const run = await runToExit({ FLOSTRA_ROLES: 'worker' });
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toEqual([
      expect.stringMatching(/^flostra: invalid configuration: .*FLOSTRA_API_URL.*FLOSTRA_WORKER_TOKEN.*KAFKA_BROKERS/),
    ]);
  });

  it.each([
    ['is not JSON', '{ "tokens": [', /^flostra: invalid configuration: FLOSTRA_TOKENS_FILE: .*tokens\.json is not valid JSON$/],
    [
      'repeats a token',
      JSON.stringify({
        tokens: [
          { token: 'r'.repeat(32), subject: 'ops', global: ['system-admin'] },
          { token: 'r'.repeat(32), subject: 'intruder', global: ['system-admin'] },
        ],
      }),
      /^flostra: invalid configuration: FLOSTRA_TOKENS_FILE: .*tokens\.json: tokens\.1\.token: the same token appears twice \(also in tokens\.0\)$/,
    ],
  ])('refuses a tokens file that %s in one line, and exits with 2', async (_what, content, line) => {
    const tokensFile = join(mkdtempSync(join(scratch, 'tokens-')), 'tokens.json');
    writeFileSync(tokensFile, content);
    const run = await runToExit({ FLOSTRA_TOKENS_FILE: tokensFile });
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toEqual([expect.stringMatching(line)]);
    expect(run.stderr).not.toContain('r'.repeat(32));
    expect(run.stdout).toBe('');
  });

  it('says what the worker role is missing when a tokens file replaces the dev tokens, and exits with 2', async () => {
    const tokensFile = join(mkdtempSync(join(scratch, 'tokens-')), 'tokens.json');
    writeFileSync(tokensFile, JSON.stringify({ tokens: [{ token: 'a'.repeat(32), subject: 'ops', workspaces: { acme: 'admin' } }] }));
    const run = await runToExit({ FLOSTRA_TOKENS_FILE: tokensFile });
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toEqual([
      expect.stringMatching(
        /^flostra: invalid configuration: FLOSTRA_WORKER_TOKEN: the worker role needs a bearer token with the global worker role/,
      ),
    ]);
    expect(run.stderr).toContain(`FLOSTRA_TOKENS_FILE (${tokensFile}) is set, so no dev worker token is generated`);
    expect(run.stderr).toContain('leave worker out of FLOSTRA_ROLES');
    expect(run.stderr).not.toContain('outside embedded mode');
  });

  it('says the port is in use, without a stack trace', async () => {
    const { server, port } = await occupiedPort();
    try {
      const run = await runToExit({ PORT: String(port) });
      expect(run.code).toBe(1);
      expect(lines(run.stderr)).toEqual([
        `flostra: cannot listen on 127.0.0.1:${port}: the address is already in use (another Flostra?); stop it or set PORT to a free port`,
      ]);
      expect(run.stderr).not.toMatch(STACK_LINE);
      // Nest reports the listen error too; it goes to debug, not to a person's screen.
      expect(run.stdout).not.toContain('"level":"error"');
    } finally {
      server.close();
    }
  });

  it("adds the stack trace, and Nest's start-up records, at LOG_LEVEL=debug", async () => {
    const { server, port } = await occupiedPort();
    try {
      const run = await runToExit({ PORT: String(port), LOG_LEVEL: 'debug' });
      expect(run.code).toBe(1);
      expect(lines(run.stderr)[0]).toBe(
        `flostra: cannot listen on 127.0.0.1:${port}: the address is already in use (another Flostra?); stop it or set PORT to a free port`,
      );
      expect(run.stderr).toMatch(STACK_LINE);
      expect(run.stdout).toMatch(/"level":"debug","msg":"Mapped \{\/health\/ready, GET\} route"/);
    } finally {
      server.close();
    }
  });

  it('says a data directory under a regular file cannot be used', async () => {
    const file = join(scratch, 'not-a-directory');
    writeFileSync(file, '');
    const run = await runToExit({ FLOSTRA_DATA_DIR: join(file, 'data') });
    expect(run.code).not.toBe(0);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain('FLOSTRA_DATA_DIR');
    expect(run.stderr).toContain(join(file, 'data'));
    expect(run.stderr).not.toMatch(STACK_LINE);
  });

  it("says where PGlite's directory cannot be created, without a stack trace", async () => {
    const dataDir = mkdtempSync(join(scratch, 'data-'));
    writeFileSync(join(dataDir, 'pgdata'), '');
    const run = await runToExit({ FLOSTRA_DATA_DIR: dataDir });
    expect(run.code).toBe(1);
    expect(lines(run.stderr)).toEqual([
      `flostra: cannot create ${join(dataDir, 'pgdata')}: it exists and is not a directory`,
      `flostra: FLOSTRA_DATA_DIR (${dataDir}) must be a directory this process can create and write`,
    ]);
  });

  it('says which server it cannot reach, without a stack trace', async () => {
    const { server, port } = await occupiedPort();
    server.close();
    const tokensDir = mkdtempSync(join(scratch, 'tokens-'));
    const tokensFile = join(tokensDir, 'tokens.json');
    writeFileSync(
      tokensFile,
      JSON.stringify({ tokens: [{ token: 'a'.repeat(32), subject: 'ops', workspaces: {}, global: ['system-admin'] }] }),
    );
    const run = await runToExit({
      EVENT_STORE_URL: `postgres://127.0.0.1:${port}/flostra`,
      FLOSTRA_TOKENS_FILE: tokensFile,
      FLOSTRA_ROLES: 'api',
    });
    expect(run.code).toBe(1);
    expect(lines(run.stderr)[0]).toBe(`flostra: cannot connect to 127.0.0.1:${port}: connection refused`);
    expect(lines(run.stderr).length).toBeLessThanOrEqual(2);
    expect(run.stderr).not.toMatch(STACK_LINE);
  });
});
