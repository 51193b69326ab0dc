import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';
import { freePort } from '../test/support/postgres-server.js';

/**
 * One Flostra process as `npm start` runs it (every role, PGlite, the in-process bus), but with a
 * tokens file of its own, so that tenants have tokens of their own and one can be revoked: the
 * isolation benchmark talks to it over loopback HTTP only.
 */

export interface Tenant {
  readonly workspaceId: string;
  readonly token: string;
}

export interface TokenGrant {
  token: string;
  subject: string;
  workspaces?: Record<string, string>;
  global?: string[];
}

export interface IsolationServer {
  readonly url: string;
  /** The directory the tokens file sits in (the benchmark keeps a busy log file beside it). */
  readonly tokensDir: string;
  /** Writes the tokens file in place, as an operator's editor or `>` does. */
  writeTokens(grants: readonly TokenGrant[]): void;
  stop(): Promise<void>;
}

export const newToken = (): string => randomBytes(24).toString('base64url');

const agent = new Agent({ keepAlive: true, maxSockets: 512 });

export interface Answer {
  status: number;
  body: string;
}

/** One request over kept-alive loopback connections; the body is read whole. */
export function call(method: string, url: string, token: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive connection the server had just closed as idle: the request was never read.
      if (req.reusedSocket && error.code === 'ECONNRESET') call(method, url, token, body, headers).then(resolve, reject);
      else reject(error);
    });
    req.end(payload);
  });
}

/** Calls and insists on one of `expected`, naming the answer otherwise. */
export async function expectCall(expected: number[], method: string, url: string, token: string, body?: unknown): Promise<Answer> {
  const answer = await call(method, url, token, body);
  if (!expected.includes(answer.status)) throw new Error(`${method} ${url} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  return answer;
}

export interface LiveStream {
  /** Resolves when the server ends the stream (or it fails); `closedAt` is `performance.now()` then. */
  readonly closed: Promise<{ closedAt: number; status: number }>;
  close(): void;
}

/** An SSE stream; `onEvent` gets each event's type and parsed data as it arrives. */
export function openLiveStream(url: string, token: string, onEvent: (type: string, data: unknown) => void): Promise<LiveStream> {
  return new Promise((resolveOpen, rejectOpen) => {
    let finish!: (value: { closedAt: number; status: number }) => void;
    const closed = new Promise<{ closedAt: number; status: number }>((resolve) => (finish = resolve));
    const req = request(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      const parser = createParser({ onEvent: (event) => onEvent(event.event ?? 'message', JSON.parse(event.data)) });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.feed(chunk));
      res.on('close', () => finish({ closedAt: performance.now(), status }));
      res.on('error', () => finish({ closedAt: performance.now(), status }));
      if (status !== 200) rejectOpen(new Error(`${url} answered ${status}`));
      else resolveOpen({ closed, close: () => req.destroy() });
    });
    req.on('error', (error) => {
      finish({ closedAt: performance.now(), status: 0 });
      rejectOpen(error);
    });
    req.end();
  });
}

const READY_TIMEOUT_MS = 120_000;

/**
 * Starts `node <main>` (the built server) on a fresh data directory and a free loopback port, with
 * `grants` as its tokens file, and waits for `/health/ready`. `env` adds or overrides settings.
 */
export async function startIsolationServer(options: {
  main: string;
  grants: readonly TokenGrant[];
  workerToken: string;
  env?: Record<string, string>;
  log: (line: string) => void;
}): Promise<IsolationServer> {
  const root = mkdtempSync(join(tmpdir(), 'flostra-isolation-'));
  const tokensDir = join(root, 'tokens');
  mkdirSync(tokensDir);
  const tokensFile = join(tokensDir, 'tokens.json');
  const writeTokens = (grants: readonly TokenGrant[]) => writeFileSync(tokensFile, JSON.stringify({ tokens: grants }, null, 2));
  writeTokens(options.grants);
  const port = await freePort();
  const env = { ...process.env };
  // The embedded stack as `npm start` runs it, whatever the outer environment names.
  for (const name of ['EVENT_STORE_URL', 'DATABASE_URL', 'KAFKA_BROKERS', 'FLOSTRA_ROLES', 'FLOSTRA_API_URL']) delete env[name];
  const child: ChildProcess = spawn(process.execPath, [options.main], {
    env: {
      ...env,
      HOST: '127.0.0.1',
      PORT: String(port),
      FLOSTRA_DATA_DIR: join(root, 'data'),
      FLOSTRA_TOKENS_FILE: tokensFile,
      FLOSTRA_WORKER_TOKEN: options.workerToken,
      LOG_LEVEL: 'warn',
      ...options.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}: ${stderr}`);
    const ready = await call('GET', `${url}/health/ready`, '').catch(() => null);
    if (ready?.status === 200) break;
    if (performance.now() > deadline) throw new Error(`the server was not ready within ${READY_TIMEOUT_MS} ms: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100)); // polling a process that is starting
  }
  options.log(`server ready on ${url}`);
  return {
    url,
    tokensDir,
    writeTokens,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
