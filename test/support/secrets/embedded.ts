import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../eventually.js';

/** `npm start` as the secrets suites run it: the built server, embedded, on loopback and an ephemeral port. */

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');

const INHERITED_AWAY = [
  'EVENT_STORE_URL',
  'DATABASE_URL',
  'KAFKA_BROKERS',
  'FLOSTRA_TOKENS_FILE',
  'FLOSTRA_ROLES',
  'FLOSTRA_API_URL',
  'FLOSTRA_WORKER_TOKEN',
  'FLOSTRA_SECRETS_KEY',
  'FLOSTRA_SECRETS_PREVIOUS_KEYS',
  'LOG_LEVEL',
];

export interface EmbeddedServer {
  url: string;
  output(): string;
  /** SIGTERM, then the exit code must be 0. */
  stop(): Promise<void>;
}

/** The embedded default on `dataDir` whatever the outer environment says, plus `env`; its http nodes may reach 127.0.0.1. */
function environment(dataDir: string, env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {
    ...process.env,
    FLOSTRA_DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    FLOSTRA_EGRESS_ALLOW: '127.0.0.1/32',
  };
  for (const name of INHERITED_AWAY) delete base[name];
  return { ...base, ...env };
}

function spawnMain(
  dataDir: string,
  env: Record<string, string>,
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: environment(dataDir, env), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

export async function startEmbedded(dataDir: string, env: Record<string, string> = {}): Promise<EmbeddedServer> {
  const { child, output, exited } = spawnMain(dataDir, env);
  const url = await eventually(
    () => {
      if (child.exitCode !== null) throw new Error(`flostra exited with ${child.exitCode}:\n${output()}`);
      return /Flostra is listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output())?.[1] ?? false;
    },
    { what: () => `the embedded server to listen:\n${output().slice(-4000)}`, timeoutMs: 60_000 },
  ).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    url,
    output,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      const code = await exited;
      if (code !== 0) throw new Error(`flostra exited with ${code} on SIGTERM:\n${output().slice(-4000)}`);
    },
  };
}

/** Runs the server until it exits by itself (a failed start): its exit code, stdout and stderr. */
export async function runToExit(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: environment(dataDir, env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}
