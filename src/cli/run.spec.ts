import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT } from './errors.js';
import type { Io } from './output.js';
import { run } from './run.js';

/** The command line run in memory: what it printed and its exit code. No command here reaches a server. */
async function flostra(args: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    out: (text) => (stdout += text),
    err: (text) => (stderr += text),
    interactive: false,
    ask: () => Promise.reject(new Error('nobody to ask')),
  };
  const code = await run(args, io, env);
  return { code, stdout, stderr };
}

describe('the flostra command line', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'flostra-cli-'));
    // A closed port: a command that reached for the server would fail with 6, not 2.
    env = { FLOSTRA_CONFIG: join(dir, 'config.json'), FLOSTRA_URL: 'http://127.0.0.1:9' };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints help and exits 0', async () => {
    const { code, stdout } = await flostra(['--help'], env);
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain('Usage: flostra');
    expect(stdout).toContain('Exit codes');
  });

  it.each([
    ['an unknown command', ['launch']],
    ['an unknown option', ['executions', 'list', '--colour']],
    ['a missing argument', ['executions', 'get']],
    ['an output format it does not have', ['executions', 'list', '--output', 'yaml']],
    ['a limit out of range', ['executions', 'list', '--limit', '0']],
    ['a revision that is no number', ['workflows', 'get', 'hello', '--revision', 'two']],
    ['an input that is not JSON', ['run', 'hello', '--input', '{name:1}']],
    ['an input that is not an object', ['run', 'hello', '--input', '[1]']],
    ['an input file that does not exist', ['run', 'hello', '--input', '@/nonexistent.json']],
    ['an unknown setting', ['config', 'set', 'colour', 'blue']],
    ['a server URL that is not one', ['--url', 'nowhere', 'executions', 'list']],
  ])('refuses %s with exit code 2, before any request', async (_what, args) => {
    const { code, stderr } = await flostra(args, env);
    expect({ code, stderr }).toEqual({ code: EXIT.usage, stderr: expect.stringMatching(/\S/) });
  });

  it('tells an unreachable server apart: exit code 6', async () => {
    const { code, stderr } = await flostra(['executions', 'list'], env);
    expect(code).toBe(EXIT.unavailable);
    expect(stderr).toContain('cannot reach the Flostra server at http://127.0.0.1:9');
  });

  it('stores settings with "config set" and shows where each comes from', async () => {
    expect((await flostra(['config', 'set', 'token', 't-file'], env)).code).toBe(EXIT.ok);
    expect((await flostra(['config', 'set', 'workspace', 'ws-file'], env)).code).toBe(EXIT.ok);
    const fromFile = JSON.parse((await flostra(['config', 'show', '--output', 'json'], env)).stdout);
    expect(fromFile).toMatchObject({ workspace: 'ws-file', tokenSet: true, sources: { token: 'config', workspace: 'config', url: 'env' } });

    // Global options count after the subcommand too; the flag beats the environment, which beats the file.
    const overridden = await flostra(['config', 'show', '-o', 'json', '--workspace', 'ws-flag'], { ...env, FLOSTRA_TOKEN: 't-env' });
    expect(JSON.parse(overridden.stdout)).toMatchObject({ workspace: 'ws-flag', sources: { token: 'env', workspace: 'flag' } });

    // The token itself is never shown.
    const text = await flostra(['config', 'show'], env);
    expect(text.stdout).toMatch(/token:\s+set \(config\)/);
    expect(text.stdout).not.toContain('t-file');

    expect((await flostra(['config', 'unset', 'token'], env)).code).toBe(EXIT.ok);
    expect(JSON.parse((await flostra(['config', 'show', '-o', 'json'], env)).stdout)).toMatchObject({ tokenSet: false });
  });

  it('with --output json, reports a usage error as one JSON document on stderr too', async () => {
    const { code, stdout, stderr } = await flostra(['executions', 'list', '--limit', '500', '--output', 'json'], env);
    expect({ code, stdout }).toEqual({ code: EXIT.usage, stdout: '' });
    expect(JSON.parse(stderr)).toEqual({
      error: { title: expect.stringContaining('--limit must be an integer from 1 to 200') },
      exitCode: EXIT.usage,
    });
  });

  it('with --output json, reports an error as one JSON document on stderr', async () => {
    const { code, stdout, stderr } = await flostra(['executions', 'list', '--output', 'json'], env);
    expect(code).toBe(EXIT.unavailable);
    expect(stdout).toBe('');
    expect(JSON.parse(stderr)).toEqual({ error: { title: expect.stringContaining('cannot reach') }, exitCode: EXIT.unavailable });
  });
});
