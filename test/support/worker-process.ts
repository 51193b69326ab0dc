import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.js';
import { TOKENS } from './test-app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'main.js');

/** Throws unless the built app (`dist/src/main.js`) is there: suites that spawn it call this first. */
export function requireBuiltApp(): void {
  if (!existsSync(MAIN)) throw new Error('dist/src/main.js is missing: run `npm run build` (npm test does)');
}

/**
 * `npm run worker`: a worker process of its own, talking to the app at `apiUrl` over HTTP and to
 * Kafka, allowed to call loopback only; resolves once it consumes dispatches.
 */
export async function spawnWorkerProcess(apiUrl: string, brokers: string[]): Promise<ChildProcess> {
  const env = {
    ...process.env,
    FLOSTRA_ROLES: 'worker',
    FLOSTRA_API_URL: apiUrl,
    FLOSTRA_WORKER_TOKEN: TOKENS.worker,
    KAFKA_BROKERS: brokers.join(','),
    FLOSTRA_EGRESS_ALLOW: '127.0.0.1/32',
    LOG_LEVEL: 'warn',
  };
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  try {
    await eventually(() => output.includes('is consuming dispatches'), {
      what: () => `the worker process to start:\n${output}`,
      timeoutMs: 60_000,
    });
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return child;
}
