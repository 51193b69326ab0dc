import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The production entry point the process suites run: `npm run build` (npm test, test:e2e and test:chaos build first). */
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');

/** What a process of `dist/src/main.js` prints once it runs: the worker-only process, and any other. */
export const WORKER_READY = 'is consuming dispatches';
export const APP_READY = 'Flostra is listening on';

/** Settings of this test process that must not leak into a spawned app (it gets only what it is given). */
const APP_SETTINGS = /^(FLOSTRA_(?!TEST_)|EVENT_STORE_URL$|DATABASE_URL$|KAFKA_BROKERS$|PORT$|HOST$|LOG_LEVEL$)/;

export interface AppProcess {
  readonly child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** Sends `signal`; resolves once the process has exited (at once for SIGSTOP/SIGCONT). */
  signal(signal: NodeJS.Signals): Promise<void>;
}

export function assertBuilt(): void {
  if (!existsSync(MAIN)) throw new Error('dist/src/main.js is missing: run `npm run build` (npm test does)');
}

/**
 * What the spawned processes get unless `env` says otherwise: Kafka sessions of 6 s (the least
 * Flostra accepts) rather than 30 s, so that a SIGKILLed worker's or ingestor's partitions pass to
 * its replacement after seconds. The fault suites wait for that after every kill.
 */
const TEST_DEFAULTS = { FLOSTRA_KAFKA_SESSION_TIMEOUT_MS: '6000' };

/**
 * Starts `node dist/src/main.js` with `env` (over this process's environment without Flostra's
 * own settings, and TEST_DEFAULTS) and resolves once its output shows `ready`.
 */
export async function spawnAppProcess(env: Record<string, string>, ready: string, timeoutMs = 60_000): Promise<AppProcess> {
  assertBuilt();
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !APP_SETTINGS.test(name)));
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { ...base, ...TEST_DEFAULTS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const what = () => `the process (${env.FLOSTRA_ROLES ?? 'all roles'}) to start:\n${output}`;
  try {
    // A process that exits while starting fails at once, with what it printed.
    await eventually(() => !running() || output.includes(ready), { what, timeoutMs, intervalMs: 50 });
    if (!running()) throw new Error(`${what()}\nit exited (${child.signalCode ?? `code ${child.exitCode}`})`);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    child,
    output: () => output,
    async signal(signal) {
      if (!running()) return;
      child.kill(signal);
      if (signal !== 'SIGSTOP' && signal !== 'SIGCONT') await exited;
    },
  };
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
