import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { TOPICS } from '../../src/core/bus.port.js';
import { createLogger } from '../../src/core/logger.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';

/**
 * The tokens file of a real process (`node dist/src/main.js`, embedded, on loopback, with a
 * temporary data directory): SIGHUP re-reads it instead of ending the process, an invalid file
 * is refused with one log line while the grants in force stay, a worker-only process survives
 * SIGHUP too, and the embedded dev tokens file is followed like a tokens file. What is asserted
 * is what an operator sees: HTTP answers, the process still running, and its log lines.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const START_UP_MS = 60_000;

const ADMIN = 'reload-admin-token-00000001';
const EDITOR = 'reload-editor-token-0000001';
const VIEWER = 'reload-viewer-token-0000001';
const WORKER = 'reload-worker-token-0000001';
const SECRETS = [ADMIN, EDITOR, VIEWER, WORKER];
const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

const GRAPH = { nodes: [{ id: 'a', type: 'noop' }], edges: [] };

interface Server {
  child: ChildProcess;
  dataDir: string;
  /** Everything written to stdout so far. */
  stdout: () => string;
  stderr: () => string;
  /** The JSON log records on stdout so far. */
  records: () => Record<string, any>[];
  exited: Promise<{ code: number | null; signal: string | null }>;
}

const children = new Set<ChildProcess>();
// Should jest itself be interrupted, no server outlives it.
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

let scratch: string;

/** The built server with the embedded default, whatever the outer environment says, plus `env`. */
async function spawnServer(env: Record<string, string>, ready: RegExp): Promise<Server> {
  const dataDir = mkdtempSync(join(scratch, 'data-'));
  const base: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: '0', FLOSTRA_DATA_DIR: dataDir };
  for (const name of [
    'EVENT_STORE_URL',
    'DATABASE_URL',
    'KAFKA_BROKERS',
    'FLOSTRA_TOKENS_FILE',
    'FLOSTRA_TOKENS_RELOAD',
    'FLOSTRA_ROLES',
    'FLOSTRA_API_URL',
    'FLOSTRA_WORKER_TOKEN',
    'LOG_LEVEL',
  ])
    delete base[name];
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  const server: Server = {
    child,
    dataDir,
    stdout: () => stdout,
    stderr: () => stderr,
    records: () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, any>),
    exited,
  };
  let gone = false;
  void exited.then(() => (gone = true));
  await eventually(
    () => {
      if (gone) throw new Error('it exited');
      return ready.test(stdout);
    },
    { what: () => `the server to start\n--- stderr\n${stderr}\n--- stdout\n${stdout}`, timeoutMs: START_UP_MS, intervalMs: 50 },
  );
  return server;
}

function urlOf(server: Server): string {
  return /Flostra is listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(server.stdout())![1];
}

/** SIGTERM, then the exit it causes: a server that ends by itself does so cleanly. */
async function stop(server: Server): Promise<{ code: number | null; signal: string | null }> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 15_000);
  const result = await server.exited;
  clearTimeout(timer);
  return result;
}

const alive = (server: Server) => server.child.exitCode === null && server.child.signalCode === null;

beforeAll(() => {
  // Cheap when dist/ is current; builds it otherwise, so this tests the sources it sits beside.
  const build = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  if (build.status !== 0)
    throw new Error(`build failed (${build.error?.message ?? `exit ${build.status}`}):\n${build.stderr}${build.stdout}`);
  scratch = mkdtempSync(join(tmpdir(), 'flostra-tokens-reload-'));
});
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

describe('a server whose tokens file is re-read on SIGHUP only (FLOSTRA_TOKENS_RELOAD=sighup)', () => {
  let server: Server;
  let api: ApiClient;
  let file: string;

  const grants = (options: { viewer: boolean; editorRole: 'editor' | 'viewer' }) => ({
    tokens: [
      { token: ADMIN, subject: 'alice', workspaces: { acme: 'admin' }, global: ['system-admin'] },
      { token: EDITOR, subject: 'eve', workspaces: { acme: options.editorRole } },
      { token: WORKER, subject: 'pool', global: ['worker'] },
      ...(options.viewer ? [{ tokenSha256: sha256(VIEWER), subject: 'victor', workspaces: { acme: 'viewer' } }] : []),
    ],
  });
  const write = (content: unknown) => writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  const list = async (token: string) => (await api.get('/v1/workspaces/acme/executions', { token })).status;
  const publish = async (token: string) => (await api.put('/v1/workspaces/acme/workflows/hello', { token, body: GRAPH })).status;
  const hangUp = () => server.child.kill('SIGHUP');
  const recordsOf = (msg: string) => server.records().filter((r) => r.msg === msg);

  beforeAll(async () => {
    file = join(mkdtempSync(join(scratch, 'tokens-')), 'tokens.json');
    write(grants({ viewer: true, editorRole: 'editor' }));
    server = await spawnServer(
      { FLOSTRA_TOKENS_FILE: file, FLOSTRA_TOKENS_RELOAD: 'sighup', FLOSTRA_ROLES: 'api' },
      /Flostra is listening on http:\/\/127\.0\.0\.1:\d+\n/,
    );
    api = client(urlOf(server));
  });
  afterAll(async () => {
    if (server) expect(await stop(server)).toEqual({ code: 0, signal: null });
  });

  it('warns once at start how many entries are plaintext, printing no token', () => {
    const warnings = server.records().filter((r) => r.level === 'warn');
    expect(warnings).toEqual([expect.objectContaining({ component: 'auth', file, plaintext: 3, tokens: 4 })]);
    expect(warnings[0].msg).toContain('tokenSha256');
    for (const secret of SECRETS) expect(server.stdout() + server.stderr()).not.toContain(secret);
  });

  it('applies a changed file on SIGHUP: a removed token is 401 and a lowered role may no longer write', async () => {
    expect(await list(VIEWER)).toBe(200);
    expect(await publish(EDITOR)).toBe(201);
    write(grants({ viewer: false, editorRole: 'viewer' }));
    // Nothing watches the file in this mode: the old grants hold until the signal.
    expect(await list(VIEWER)).toBe(200);

    hangUp();
    await eventually(async () => (await list(VIEWER)) === 401, 'the viewer to be refused');
    expect(await publish(EDITOR)).toBe(403);
    expect(await list(EDITOR)).toBe(200);
    expect(alive(server)).toBe(true);
    const [reloaded] = await eventually(() => {
      const found = recordsOf('tokens file reloaded; the new grants apply from the next request');
      return found.length > 0 && found;
    }, 'the reload to be logged');
    expect(reloaded).toMatchObject({ level: 'info', trigger: 'SIGHUP', file, tokens: 3, added: 0, removed: 1, changed: 1, plaintext: 3 });
    for (const secret of SECRETS) expect(server.stdout()).not.toContain(secret);
  });

  it.each([
    ['not JSON', '{ "tokens": [ { "token": ', 'is not valid JSON'],
    [
      'a repeated token',
      {
        tokens: [
          { token: ADMIN, subject: 'alice', workspaces: { acme: 'admin' } },
          { token: ADMIN, subject: 'mallory' },
        ],
      },
      'tokens.1.token: the same token appears twice (also in tokens.0)',
    ],
  ])('refuses a file that is %s on SIGHUP with one log line, and keeps the grants', async (_what, content, problem) => {
    const before = recordsOf('tokens file refused; the previous grants stay in force').length;
    write(content);
    hangUp();
    const refused = await eventually(() => {
      const found = recordsOf('tokens file refused; the previous grants stay in force');
      return found.length > before && found.slice(before);
    }, 'the refusal to be logged');
    expect(refused).toEqual([expect.objectContaining({ level: 'error', trigger: 'SIGHUP', file })]);
    expect(refused[0].problem).toContain(problem);
    expect(alive(server)).toBe(true);
    // The grants of the last valid file: the editor, lowered to viewer, still reads; the viewer stays out.
    expect(await list(ADMIN)).toBe(200);
    expect(await list(EDITOR)).toBe(200);
    expect(await publish(EDITOR)).toBe(403);
    expect(await list(VIEWER)).toBe(401);
    for (const secret of SECRETS) expect(server.stdout()).not.toContain(secret);
  });

  it('does not end a worker-only process either: it says it has nothing to reload', async () => {
    const brokers = testKafkaBrokers();
    // The dispatcher would create the dispatch topic; there is none here.
    const bus = new KafkaBus({ brokers, clientId: 'tokens-reload-test', logger: createLogger({ level: 'silent' }) });
    await bus.ensureTopics([{ topic: TOPICS.dispatch, partitions: 12 }]);
    await bus.close();
    const worker = await spawnServer(
      { FLOSTRA_ROLES: 'worker', FLOSTRA_API_URL: urlOf(server), FLOSTRA_WORKER_TOKEN: WORKER, KAFKA_BROKERS: brokers.join(',') },
      /is consuming dispatches/,
    );
    worker.child.kill('SIGHUP');
    await eventually(
      () => worker.records().some((r) => r.msg === 'SIGHUP: nothing to reload, this process has no tokens loaded'),
      'the worker to log the SIGHUP',
    );
    expect(alive(worker)).toBe(true);
    expect(await stop(worker)).toEqual({ code: 0, signal: null });
  });
});

describe('a watched tokens file beside a busy log, under steady requests', () => {
  it('refuses a removed token and ends its open event stream while the load goes on', async () => {
    const file = join(mkdtempSync(join(scratch, 'busy-')), 'tokens.json');
    const grants = (viewer: boolean) => ({
      tokens: [
        { token: ADMIN, subject: 'alice', workspaces: { acme: 'admin' } },
        ...(viewer ? [{ token: VIEWER, subject: 'victor', workspaces: { acme: 'viewer' } }] : []),
      ],
    });
    writeFileSync(file, JSON.stringify(grants(true)));
    const server = await spawnServer(
      { FLOSTRA_TOKENS_FILE: file, FLOSTRA_ROLES: 'api' },
      /Flostra is listening on http:\/\/127\.0\.0\.1:\d+\n/,
    );
    const api = client(urlOf(server));
    let stopped = false;
    // A log beside the tokens file, written all the time: each line is an event of the directory.
    let logLines = 0;
    const log = setInterval(() => appendFileSync(join(file, '..', 'app.log'), `line ${++logLines}\n`), 1);
    // The viewer's steady requests, one after the other.
    const statuses: number[] = [];
    const load = (async () => {
      while (!stopped) statuses.push((await api.get('/v1/workspaces/acme/executions', { token: VIEWER })).status);
    })();
    try {
      const stream = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = httpRequest(`${urlOf(server)}/v1/workspaces/acme/events`, {
          headers: { authorization: `Bearer ${VIEWER}`, accept: 'text/event-stream' },
          agent: false,
        });
        req.on('response', resolve).on('error', reject).end();
      });
      expect(stream.statusCode).toBe(200);
      let text = '';
      let ended = false;
      stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      stream.on('close', () => (ended = true));
      await eventually(() => statuses.filter((status) => status === 200).length >= 20 && logLines >= 20, 'the load and the log to run');

      writeFileSync(file, JSON.stringify(grants(false)));
      const [answered, logged] = [statuses.length, logLines];
      // Bounded only as a failing test: revocation must not wait for the directory or the load to fall quiet.
      await eventually(() => statuses.slice(answered).includes(401) && ended, {
        what: 'the viewer refused and its stream ended',
        timeoutMs: 10_000,
      });
      expect(text).toContain(': stream ended: grant revoked');
      // Once refused, refused for good, while the log and the requests went on.
      const firstRefusal = statuses.indexOf(401, answered);
      await eventually(() => statuses.length > firstRefusal + 5, 'more requests after the refusal');
      expect(new Set(statuses.slice(firstRefusal))).toEqual(new Set([401]));
      expect(logLines).toBeGreaterThan(logged);
      expect(await api.get('/v1/workspaces/acme/executions', { token: ADMIN })).toMatchObject({ status: 200 });
    } finally {
      stopped = true;
      clearInterval(log);
      await load;
      expect(await stop(server)).toEqual({ code: 0, signal: null });
    }
  });
});

describe('the embedded dev tokens file', () => {
  it('is followed like a tokens file: a replaced admin token is refused, its successor admitted', async () => {
    const server = await spawnServer({ FLOSTRA_ROLES: 'api' }, /\/v1\/executions\/<executionId>.*\n/);
    try {
      const api = client(urlOf(server));
      const devFile = join(server.dataDir, 'dev-tokens.json');
      const dev = JSON.parse(readFileSync(devFile, 'utf8')) as { workspace: string; admin: string; worker: string };
      const projections = async (token: string) => (await api.get('/v1/admin/projections', { token })).status;
      expect(await projections(dev.admin)).toBe(200);
      const successor = 'dev-admin-successor-token-0001';
      writeFileSync(`${devFile}.new`, JSON.stringify({ ...dev, admin: successor }));
      renameSync(`${devFile}.new`, devFile);
      await eventually(async () => (await projections(dev.admin)) === 401, 'the old dev admin token to be refused');
      expect(await projections(successor)).toBe(200);
      // A SIGHUP with the file unchanged is answered, and changes nothing.
      server.child.kill('SIGHUP');
      await eventually(
        () => server.records().some((r) => r.msg === 'tokens file re-read: the grants are unchanged' && r.trigger === 'SIGHUP'),
        'the SIGHUP to be answered',
      );
      expect(await projections(successor)).toBe(200);
      expect(alive(server)).toBe(true);
    } finally {
      expect(await stop(server)).toEqual({ code: 0, signal: null });
    }
  });
});
