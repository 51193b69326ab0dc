import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.js';
import { TOKENS } from './test-app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const OUTPUT_KEPT = 256 * 1024;

const children = new Set<ChildProcess>();
// Should jest itself be interrupted, no process outlives it.
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** A Flostra process of the built server (`dist/src/main.js`), on loopback, as a deployment runs one role set. */
export interface FlostraProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  output(): string;
  /** Resolves to the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** Waits until the output holds `text` (default bound 30 s). */
  waitFor(text: string, timeoutMs?: number): Promise<void>;
  signal(name: NodeJS.Signals): void;
}

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

/** A tokens file holding the test tokens (a server that is not embedded needs one). */
export function writeTestTokensFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'flostra-tokens-')), 'tokens.json');
  writeFileSync(
    file,
    JSON.stringify({
      tokens: [
        { tokenSha256: sha256(TOKENS.adminA), subject: 'alice', workspaces: { 'ws-a': 'admin' } },
        { tokenSha256: sha256(TOKENS.operatorA), subject: 'oscar', workspaces: { 'ws-a': 'operator' } },
        { tokenSha256: sha256(TOKENS.viewerA), subject: 'victor', workspaces: { 'ws-a': 'viewer' } },
        { tokenSha256: sha256(TOKENS.worker), subject: 'worker', global: ['worker'] },
      ],
    }),
  );
  return file;
}

export function builtServerExists(): boolean {
  return existsSync(MAIN);
}

/** Starts the built server with `env` on top of the environment (HOST 127.0.0.1, PORT 0, info logs). */
export function spawnFlostra(env: Record<string, string>): FlostraProcess {
  if (!builtServerExists()) throw new Error('dist/src/main.js is missing: run `npm run build` (npm test does)');
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', FLOSTRA_TOKENS_RELOAD: 'sighup', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  const keep = (chunk: string) => {
    output += chunk;
    if (output.length > OUTPUT_KEPT) output = output.slice(-OUTPUT_KEPT);
  };
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return {
    child,
    pid: child.pid!,
    output: () => output,
    exited,
    waitFor: (text, timeoutMs = 30_000) =>
      eventually(() => output.includes(text), {
        what: () => `"${text}" in the output of process ${child.pid}:\n${output.slice(-4000)}`,
        timeoutMs,
      }).then(() => undefined),
    signal: (name) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(name);
    },
  };
}
