import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient, type HttpResult } from '../support/http-client.js';

/**
 * The embedded default (`npm start`: PGlite under FLOSTRA_DATA_DIR) keeps every write it
 * acknowledged when the process is killed without any chance to shut down, and comes back on
 * the same data dir with the same dev tokens and the same demo workflow.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const START_UP_MS = 60_000;
const EXIT_MS = 10_000;
const OUTPUT_KEPT = 32 * 1024;

interface DevTokens {
  workspace: string;
  admin: string;
  worker: string;
}

interface Server {
  child: ChildProcess;
  url: string;
  output: () => string;
}

const children = new Set<ChildProcess>();
// Should jest itself be interrupted, no server outlives it.
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

function tail(text: string): string {
  return text.length > OUTPUT_KEPT ? text.slice(-OUTPUT_KEPT) : text;
}

/** The built server as `npm start` runs it, on loopback, an ephemeral port and `dataDir`. */
async function startServer(dataDir: string, roles = 'api'): Promise<Server> {
  const env: NodeJS.ProcessEnv = { ...process.env, FLOSTRA_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' };
  // Whatever the outer environment says, this is the embedded default.
  for (const name of ['EVENT_STORE_URL', 'DATABASE_URL', 'KAFKA_BROKERS', 'FLOSTRA_TOKENS_FILE', 'FLOSTRA_MAX_BODY_BYTES'])
    delete env[name];
  // By default only the API: no in-process worker or watchdog may move an execution past what
  // was acknowledged.
  env.FLOSTRA_ROLES = roles;
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout = tail(stdout + chunk)));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = tail(stderr + chunk)));
  const output = () => `--- stderr ---\n${stderr}\n--- stdout ---\n${stdout}`;

  const url = await new Promise<string>((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      reject(new Error(`flostra did not start: ${why}\n${output()}`));
    };
    const onData = () => {
      const match = /Flostra is listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match === null) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve(match[1]);
    };
    const onExit = (code: number | null, signal: string | null) => fail(`it exited (code ${code}, signal ${signal})`);
    const timer = setTimeout(() => fail(`no "listening" line within ${START_UP_MS} ms`), START_UP_MS);
    child.stdout.on('data', onData);
    child.once('exit', onExit);
    child.once('error', (error) => fail(error.message));
  });
  return { child, url, output };
}

/** SIGKILL: no shutdown hook, no flush, no close of the database. */
async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pid ${child.pid} still alive ${EXIT_MS} ms after SIGKILL`)), EXIT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  child.kill('SIGKILL');
  await exited;
  children.delete(child);
}

function readDevTokens(dataDir: string): DevTokens {
  return JSON.parse(readFileSync(join(dataDir, 'dev-tokens.json'), 'utf8')) as DevTokens;
}

function expectStatus(res: HttpResult, status: number): void {
  // The body rides along so a wrong status shows what the server said.
  expect({ status: res.status, body: res.body }).toMatchObject({ status });
}

describe('the embedded default after SIGKILL', () => {
  let dataDir: string;
  let server: Server;
  let api: ApiClient;
  let tokens: DevTokens;
  let tokensFile: string;
  let demoBefore: unknown;

  /** What the server acknowledged before the kill, per execution: its last answer and a view of it. */
  const acknowledged = new Map<string, { position: string; status: string; view: any }>();
  const startBodies = new Map<string, { body: object; answer: unknown }>();

  const operator = () => ({ token: tokens.admin });
  const executionsPath = () => `/v1/workspaces/${tokens.workspace}/workflows/demo/executions`;

  beforeAll(() => {
    if (!existsSync(MAIN)) {
      const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
      if (build.status !== 0)
        throw new Error(`npm run build failed (${build.error?.message ?? `exit ${build.status}`}):\n${build.stderr}${build.stdout}`);
    }
    dataDir = mkdtempSync(join(tmpdir(), 'flostra-embedded-'));
  }, 320_000);

  afterAll(async () => {
    for (const child of [...children]) await killHard(child).catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    'starts on a fresh data dir, with dev tokens and the demo workflow',
    async () => {
      server = await startServer(dataDir);
      api = client(server.url);
      tokensFile = readFileSync(join(dataDir, 'dev-tokens.json'), 'utf8');
      tokens = readDevTokens(dataDir);
      expect(server.output()).toContain(tokens.admin);
      const demo = await api.get(`/v1/workspaces/${tokens.workspace}/workflows/demo`, operator());
      expectStatus(demo, 200);
      expect(demo.body).toMatchObject({ name: 'demo', revision: 1 });
      demoBefore = demo.body;
    },
    START_UP_MS + 30_000,
  );

  it('acknowledges starts (with and without a key), a claim, a heartbeat and a cancel', async () => {
    const startOne = async (key: string | null, input: object) => {
      const body = { input };
      const res = await api.post(executionsPath(), { ...operator(), body, headers: key ? { 'idempotency-key': key } : {} });
      expectStatus(res, 201);
      if (key) startBodies.set(key, { body, answer: res.body });
      acknowledged.set(res.body.executionId, { position: res.body.position, status: res.body.status, view: null });
      return res.body.executionId as string;
    };
    const claimed = await startOne('restart-claimed', { name: 'claimed' });
    await startOne(null, { name: 'plain' });
    await startOne('restart-queued', { name: 'queued' });
    const cancelled = await startOne(null, { name: 'cancelled' });

    const attemptId = (await api.get(`/v1/executions/${claimed}`, operator())).body.attempts[0].attemptId as string;
    const attempt = `/v1/executions/${claimed}/attempts/${attemptId}`;
    const claim = await api.post(`${attempt}/claim`, { token: tokens.worker, body: { workerId: 'restart-worker' } });
    expectStatus(claim, 200);
    const heartbeat = await api.post(`${attempt}/heartbeat`, {
      token: tokens.worker,
      body: { workerId: 'restart-worker', fencingToken: claim.body.fencingToken },
    });
    expectStatus(heartbeat, 200);
    acknowledged.set(claimed, { position: heartbeat.body.position, status: 'running', view: null });

    const cancel = await api.post(`/v1/executions/${cancelled}/cancel`, { ...operator(), body: { reason: 'before the crash' } });
    expectStatus(cancel, 202);
    acknowledged.set(cancelled, { position: cancel.body.position, status: cancel.body.status, view: null });
    expect(cancel.body.status).toBe('cancelled');

    for (const [executionId, ack] of acknowledged) {
      const view = await api.get(`/v1/executions/${executionId}`, operator());
      expectStatus(view, 200);
      expect(view.body).toMatchObject({ status: ack.status, position: ack.position });
      ack.view = view.body;
    }
    expect(acknowledged.get(claimed)!.view.attempts).toEqual([
      expect.objectContaining({ attemptId, status: 'running', workerId: 'restart-worker', leaseExpiresAt: heartbeat.body.leaseExpiresAt }),
    ]);
  });

  it(
    'comes back on the same data dir after SIGKILL, reusing the dev tokens',
    async () => {
      await killHard(server.child);
      server = await startServer(dataDir);
      api = client(server.url);
      expect(readFileSync(join(dataDir, 'dev-tokens.json'), 'utf8')).toBe(tokensFile);
      expect(server.output()).toContain(tokens.admin);
      expectStatus(await api.get(`/v1/workspaces/${tokens.workspace}/workflows/demo`, { token: tokens.admin }), 200);
    },
    START_UP_MS + 30_000,
  );

  it('still has every acknowledged execution exactly as acknowledged', async () => {
    expect(acknowledged.size).toBe(4);
    for (const [executionId, ack] of acknowledged) {
      const view = await api.get(`/v1/executions/${executionId}`, operator());
      expectStatus(view, 200);
      expect(view.body).toEqual(ack.view);
      const history = await api.get(`/v1/executions/${executionId}/history?limit=1000`, operator());
      expectStatus(history, 200);
      expect((history.body.events as { position: string }[]).at(-1)!.position).toBe(ack.position);
    }
  });

  it('still accepts the worker token, and the claim still holds', async () => {
    const claimed = [...acknowledged.values()].find((ack) => ack.status === 'running')!.view;
    const attempt = claimed.attempts[0];
    // Another worker is turned away because the claim survived, not because the token is unknown.
    const rival = await api.post(`/v1/executions/${claimed.executionId}/attempts/${attempt.attemptId}/claim`, {
      token: tokens.worker,
      body: { workerId: 'rival-worker' },
    });
    expectStatus(rival, 409);
    expect(rival.body).toMatchObject({ code: 'stale_attempt', detail: 'attempt is claimed by another worker' });
  });

  it('replays a start with the same Idempotency-Key: 200 and the original body', async () => {
    expect(startBodies.size).toBe(2);
    for (const [key, { body, answer }] of startBodies) {
      const replay = await api.post(executionsPath(), { ...operator(), body, headers: { 'idempotency-key': key } });
      expectStatus(replay, 200);
      expect(replay.body).toEqual(answer);
    }
  });

  it('did not publish the demo workflow again', async () => {
    const demo = await api.get(`/v1/workspaces/${tokens.workspace}/workflows/demo`, operator());
    expectStatus(demo, 200);
    expect(demo.body).toEqual(demoBefore);
    expect(demo.body.revision).toBe(1);
    expectStatus(await api.get(`/v1/workspaces/${tokens.workspace}/workflows/demo?revision=2`, operator()), 404);
  });
});

describe('the embedded default runs after a restart what was queued at SIGKILL', () => {
  let dataDir: string;

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'flostra-embedded-queued-'));
  });

  afterAll(async () => {
    for (const child of [...children]) await killHard(child).catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('dispatches again, after the restart, an attempt the in-process bus lost with the process', async () => {
    // Everything but the worker: the attempt is dispatched into the in-process bus and waits there.
    const first = await startServer(dataDir, 'api,dispatcher,ingestor,projector,watchdog');
    const tokens = readDevTokens(dataDir);
    const started = await client(first.url).post(`/v1/workspaces/${tokens.workspace}/workflows/demo/executions`, {
      token: tokens.admin,
      body: { input: { name: 'after the crash' } },
    });
    expectStatus(started, 201);
    await killHard(first.child);

    const second = await startServer(dataDir, 'api,dispatcher,ingestor,projector,timer,watchdog,worker');
    const api = client(second.url);
    const view = await eventually(
      async () => {
        const current: HttpResult = await api.get(`/v1/executions/${started.body.executionId}`, { token: tokens.admin });
        // The demo's durable delay suspends the first attempt and a resume finishes the run; the
        // lost dispatch was sent again rather than retried after its lease ran out.
        const reasons = (current.body?.attempts ?? []).map((a: { reason: string }) => a.reason);
        expect({ status: current.body?.status, reasons }).toEqual({ status: 'succeeded', reasons: ['start', 'resume'] });
        return current;
      },
      { what: 'the execution queued before the kill to succeed', timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(view.body.nodes.find((n: { nodeId: string }) => n.nodeId === 'shape').output).toEqual({ greeting: 'hello after the crash' });
  });
});
