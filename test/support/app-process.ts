import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.js';
import { TOKENS } from './test-app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The production entry point the process suites run: `npm run build` (npm test, test:e2e and test:chaos build first). */
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');

/** What a process of `dist/src/main.js` prints once it runs: the worker-only process, and any other. */
export const WORKER_READY = 'is consuming dispatches';
export const APP_READY = 'Flostra is listening on';

/** The last output kept per process: enough for any message a suite waits for, bounded for long runs. */
const OUTPUT_KEPT = 256 * 1024;

/** Settings of this test process that must not leak into a spawned app (it gets only what it is given). */
const APP_SETTINGS = /^(FLOSTRA_(?!TEST_)|EVENT_STORE_URL$|DATABASE_URL$|KAFKA_BROKERS$|PORT$|HOST$|LOG_LEVEL$)/;

/**
 * What the spawned processes get unless `env` says otherwise: loopback on a free port, info logs,
 * tokens reloaded on SIGHUP only, and Kafka sessions of 6 s (the least Flostra accepts) rather
 * than 30 s, so that a SIGKILLed worker's or ingestor's partitions pass to its replacement after
 * seconds. The fault suites wait for that after every kill.
 */
const TEST_DEFAULTS = {
  HOST: '127.0.0.1',
  PORT: '0',
  LOG_LEVEL: 'info',
  FLOSTRA_TOKENS_RELOAD: 'sighup',
  FLOSTRA_KAFKA_SESSION_TIMEOUT_MS: '6000',
};

const children = new Set<ChildProcess>();
// Should jest itself be interrupted, no process outlives it.
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** A process of the built server (`dist/src/main.js`), as a deployment runs one role set. */
export interface AppProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The last 256 KiB it wrote to stdout and stderr. */
  output(): string;
  /** Resolves to the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** Waits until the output holds `text` (default bound 30 s). */
  waitFor(text: string, timeoutMs?: number): Promise<void>;
  /** Sends `signal` if it still runs; resolves once it has exited (at once for SIGSTOP/SIGCONT). */
  signal(signal: NodeJS.Signals): Promise<void>;
}

export function assertBuilt(): void {
  if (!existsSync(MAIN)) throw new Error('dist/src/main.js is missing: run `npm run build` (npm test does)');
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
        { tokenSha256: sha256(TOKENS.metrics), subject: 'prometheus', global: ['metrics'] },
      ],
    }),
  );
  return file;
}

/**
 * Starts `node dist/src/main.js` with `env` over this process's environment without Flostra's
 * own settings, and over TEST_DEFAULTS; returns at once (see spawnAppProcess to wait until it runs).
 */
export function spawnFlostra(env: Record<string, string>): AppProcess {
  assertBuilt();
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !APP_SETTINGS.test(name)));
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { ...base, ...TEST_DEFAULTS, ...env },
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
  const running = () => child.exitCode === null && child.signalCode === null;
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
    async signal(signal) {
      if (!running()) return;
      child.kill(signal);
      if (signal !== 'SIGSTOP' && signal !== 'SIGCONT') await exited;
    },
  };
}

/** Starts the built server (as spawnFlostra) and resolves once its output shows `ready`. */
export async function spawnAppProcess(env: Record<string, string>, ready: string, timeoutMs = 60_000): Promise<AppProcess> {
  const app = spawnFlostra(env);
  const running = () => app.child.exitCode === null && app.child.signalCode === null;
  const what = () => `the process (${env.FLOSTRA_ROLES ?? 'all roles'}) to start:\n${app.output()}`;
  try {
    // A process that exits while starting fails at once, with what it printed.
    await eventually(() => !running() || app.output().includes(ready), { what, timeoutMs, intervalMs: 50 });
    if (!running()) throw new Error(`${what()}\nit exited (${app.child.signalCode ?? `code ${app.child.exitCode}`})`);
  } catch (error) {
    app.child.kill('SIGKILL');
    throw error;
  }
  return app;
}

/**
 * `npm run worker`: a worker process of its own, talking to the app at `apiUrl` over HTTP (with
 * the worker `token`) and to Kafka, allowed to call loopback only; resolves once it consumes dispatches.
 */
export function spawnWorkerProcess(apiUrl: string, brokers: string[], token: string): Promise<AppProcess> {
  const env = {
    FLOSTRA_ROLES: 'worker',
    FLOSTRA_API_URL: apiUrl,
    FLOSTRA_WORKER_TOKEN: token,
    KAFKA_BROKERS: brokers.join(','),
    FLOSTRA_EGRESS_ALLOW: '127.0.0.1/32',
    LOG_LEVEL: 'warn',
  };
  return spawnAppProcess(env, WORKER_READY);
}
