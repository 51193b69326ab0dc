import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { BarrierServer } from '../support/barrier-server.js';

/**
 * `flostra`, the built command-line client, spawned as a user runs it against the whole app on
 * Postgres with a worker. The CLI reaches the app through a loopback TCP relay, so that the app
 * can be restarted (or the relay can cut every connection) under a running `flostra watch`.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A loopback TCP relay to a target port that can change, and that can drop every connection. */
class Relay {
  private readonly sockets = new Set<Socket>();
  private server!: Server;
  port = 0;

  constructor(public targetPort: number) {}

  async start(): Promise<void> {
    this.server = createServer((downstream) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const socket of [downstream, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          downstream.destroy();
          upstream.destroy();
        });
      }
      downstream.pipe(upstream).pipe(downstream);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  dropAll(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the flostra CLI against a running Flostra', () => {
  let app: TestApp;
  let api: ApiClient;
  let relay: Relay;
  let dir: string;
  const barrier = new BarrierServer();
  let env: NodeJS.ProcessEnv;
  const children = new Set<ChildProcess>();

  /** Starts `flostra args…`; `result` resolves when it exits. */
  const spawnCli = (args: string[], extraEnv: NodeJS.ProcessEnv = {}) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: dir, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    const outcome: Outcome = { code: null, signal: null, stdout: '', stderr: '' };
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (outcome.stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (outcome.stderr += chunk));
    const result = new Promise<Outcome>((resolve) =>
      child.on('close', (code, signal) => {
        children.delete(child);
        resolve({ ...outcome, code, signal });
      }),
    );
    return { child, outcome, result };
  };
  const flostra = (...args: string[]) => spawnCli(args).result;
  const flostraJson = async (...args: string[]) => {
    const { code, stdout, stderr } = await flostra(...args, '--output', 'json');
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    return JSON.parse(stdout);
  };
  const statusOf = async (id: string) => (await api.get(`/v1/executions/${id}`, { token: TOKENS.adminA })).body.status as string;
  const lines = (text: string) => text.split('\n').filter((line) => line !== '');
  /** Lines without their leading HH:MM:SS. */
  const said = (text: string) => lines(text).map((line) => line.replace(/^\d\d:\d\d:\d\d {2}/, ''));

  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return name;
  };

  beforeAll(async () => {
    if (!existsSync(CLI)) {
      const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
      if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stderr}${build.stdout}`);
    }
    dir = mkdtempSync(join(tmpdir(), 'flostra-cli-e2e-'));
    await barrier.start();
    app = await startTestApp('postgres', {}, { worker: { egressAllow: ['127.0.0.1/32'] } });
    api = client(app.url);
    relay = new Relay(Number(new URL(app.url).port));
    await relay.start();
    // HOME and XDG_CONFIG_HOME point at an empty folder: no config file of whoever runs the tests.
    env = {
      PATH: process.env.PATH,
      HOME: dir,
      XDG_CONFIG_HOME: join(dir, 'config'),
      FLOSTRA_URL: `http://127.0.0.1:${relay.port}`,
      FLOSTRA_TOKEN: TOKENS.adminA,
      FLOSTRA_WORKSPACE: 'ws-a',
    };
    file(
      'hello.yaml',
      [
        'name: hello',
        'nodes:',
        '  - id: greet',
        '    type: transform',
        '    config: { expression: \'{ "greeting": "hello " & input.name }\' }',
        '  - id: shout',
        '    type: transform',
        '    config: { expression: \'$uppercase(nodes.greet.greeting) & "!"\' }',
        'edges:',
        '  - { from: greet, to: shout }',
        '',
      ].join('\n'),
    );
    file(
      'broken.json',
      JSON.stringify({
        nodes: [
          { id: 'first', type: 'noop' },
          { id: 'boom', type: 'fail', config: { code: 'card_declined', message: 'no funds' } },
        ],
        edges: [{ from: 'first', to: 'boom' }],
      }),
    );
    file(
      'gate.json',
      JSON.stringify({
        name: 'gate',
        nodes: [
          { id: 'check', type: 'approval', config: { action: { amount: 12 } } },
          { id: 'ship', type: 'noop' },
        ],
        edges: [{ from: 'check', to: 'ship' }],
      }),
    );
    file(
      'slow.json',
      JSON.stringify({
        name: 'slow',
        // A request held open keeps the attempt running (a delay would wait outside it, on a timer).
        nodes: [{ id: 'nap', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/nap` } }],
        edges: [],
        timeouts: { leaseMs: 3_000 },
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await barrier.stop();
    for (const child of children) child.kill('SIGKILL');
    await relay?.stop();
    await app?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("is the package's bin: an executable that runs by its own shebang", async () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(join(ROOT, manifest.bin.flostra)).toBe(CLI);
    const version = spawnSync(CLI, ['--version'], { encoding: 'utf8', env });
    expect({ status: version.status, stdout: version.stdout.trim() }).toEqual({
      status: 0,
      stdout: (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    });
  });

  it('publishes a YAML and a JSON workflow, named by the file or by --name', async () => {
    const yaml = await flostra('workflows', 'publish', 'hello.yaml');
    expect(yaml).toMatchObject({ code: 0, stdout: expect.stringMatching(/^published hello revision 1 /) });
    const json = await flostra('workflows', 'publish', 'broken.json', '--name', 'payment');
    expect(json).toMatchObject({ code: 0, stdout: expect.stringMatching(/^published payment revision 1 /) });
    for (const name of ['gate.json', 'slow.json']) expect((await flostra('workflows', 'publish', name)).code).toBe(0);

    const again = await flostra('workflows', 'publish', 'hello.yaml');
    expect(again).toMatchObject({ code: 0, stdout: expect.stringContaining('hello unchanged: revision 1') });

    const revision = await flostraJson('workflows', 'get', 'hello');
    expect(revision).toMatchObject({ name: 'hello', revision: 1, workspaceId: 'ws-a' });
    expect(revision.graph.nodes.map((n: { id: string }) => n.id)).toEqual(['greet', 'shout']);
    const table = await flostra('workflows', 'get', 'payment');
    expect(lines(table.stdout)).toEqual(expect.arrayContaining([expect.stringMatching(/^boom\s+fail\s+first\s/)]));
  });

  it('runs a workflow with --watch: every node as it happens, the final status, exit code 0', async () => {
    const { code, stdout, stderr } = await flostra('run', 'hello', '--input', '{"name":"world"}', '--watch');
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const out = said(stdout);
    expect(out[0]).toMatch(/^started execution [0-9a-f-]{36} \(hello revision 1\)$/);
    const progress = out.filter((line) => /^(node|execution) /.test(line));
    expect(progress).toEqual([
      'execution started: workflow hello revision 1, by alice',
      'node greet started',
      'node greet succeeded: {"greeting":"hello world"}',
      'node shout started',
      'node shout succeeded: "HELLO WORLD!"',
      'execution succeeded: {"shout":"HELLO WORLD!"}',
    ]);
  });

  it('exits 1 when the execution it watches fails, saying which node failed and why', async () => {
    const { code, stdout } = await flostra('run', 'payment', '--watch');
    expect(code).toBe(1);
    expect(said(stdout)).toEqual(
      expect.arrayContaining([
        'node first succeeded: null',
        'node boom failed: card_declined: no funds',
        'execution failed: card_declined: no funds',
      ]),
    );
  });

  it('answers one JSON document with --output json, and lists, reads and pages executions', async () => {
    writeFileSync(join(dir, 'input.json'), '{"name":"json"}');
    const started = await flostraJson('run', 'hello', '--input', '@input.json', '--idempotency-key', 'cli-json-1');
    expect(started).toMatchObject({ executionId: expect.any(String), workflowRevision: 1, replayed: false });
    const replay = await flostraJson('run', 'hello', '--input', '@input.json', '--idempotency-key', 'cli-json-1');
    expect(replay).toMatchObject({ executionId: started.executionId, replayed: true });
    const conflict = await flostra('run', 'hello', '--input', '{"name":"other"}', '--idempotency-key', 'cli-json-1');
    expect(conflict).toMatchObject({ code: 5, stderr: expect.stringContaining('[idempotency_conflict]') });

    const watched = await flostraJson('watch', started.executionId);
    expect(watched).toMatchObject({ executionId: started.executionId, status: 'succeeded', output: { shout: 'HELLO JSON!' } });

    const page = await flostraJson('executions', 'list', '--workflow', 'hello', '--limit', '1');
    expect(page.executions).toHaveLength(1);
    expect(page.executions[0].executionId).toBe(started.executionId);
    expect(page.nextCursor).toEqual(expect.any(String));
    const next = await flostraJson('executions', 'list', '--workflow', 'hello', '--limit', '1', '--cursor', page.nextCursor);
    expect(next.executions[0].executionId).not.toBe(started.executionId);
    const failed = await flostraJson('executions', 'list', '--status', 'failed');
    expect(failed.executions.map((e: { workflow: { name: string } }) => e.workflow.name)).toEqual(['payment']);

    const text = await flostra('executions', 'list');
    expect(lines(text.stdout)[0]).toMatch(/^EXECUTION\s+WORKFLOW\s+STATUS\s+ATTEMPTS\s+STARTED\s+ENDED$/);
    expect(text.stdout).toContain(`${started.executionId}  hello@1`);

    const view = await flostraJson('executions', 'get', started.executionId);
    expect(view.nodes.map((n: { nodeId: string; status: string }) => `${n.nodeId}:${n.status}`)).toEqual([
      'greet:succeeded',
      'shout:succeeded',
    ]);
    const history = await flostraJson('history', started.executionId);
    expect(history.events.map((e: { type: string }) => e.type)).toEqual(
      expect.arrayContaining(['ExecutionStarted', 'NodeSucceeded', 'ExecutionSucceeded']),
    );
    const listed = await flostraJson('workflows', 'list');
    // Every published workflow, run or not, with its latest revision.
    expect(listed.workflows.map((w: { name: string; revision: number }) => `${w.name}@${w.revision}`)).toEqual([
      'gate@1',
      'hello@1',
      'payment@1',
      'slow@1',
    ]);
  });

  it('cancels a running execution and redrives it', async () => {
    const { executionId } = await flostraJson('run', 'slow');
    await eventually(async () => (await statusOf(executionId)) === 'running', 'the slow execution to run');
    const cancel = await flostra('executions', 'cancel', executionId, '--reason', 'enough');
    expect(cancel).toMatchObject({ code: 0, stdout: expect.stringContaining(`cancel requested for ${executionId}`) });
    await eventually(async () => (await statusOf(executionId)) === 'cancelled', 'the execution to be cancelled');

    const redrive = await flostraJson('executions', 'redrive', executionId, '--idempotency-key', 'again-1');
    expect(redrive).toMatchObject({ attemptNumber: 2, idempotencyKey: 'again-1' });
    await eventually(async () => (await statusOf(executionId)) === 'running', 'the redriven execution to run');
    expect((await flostra('executions', 'cancel', executionId)).code).toBe(0);
    await eventually(async () => (await statusOf(executionId)) === 'cancelled', 'the execution to be cancelled again');
    // Cancelling one that ended otherwise is a conflict.
    const failed = (await flostraJson('executions', 'list', '--status', 'failed')).executions[0].executionId;
    const late = await flostra('executions', 'cancel', failed);
    expect(late).toMatchObject({ code: 5, stderr: expect.stringContaining('[invalid_state]') });
  });

  it('approves only the action it was shown: the digest is required without a terminal', async () => {
    const { executionId } = await flostraJson('run', 'gate');
    await eventually(async () => (await statusOf(executionId)) === 'awaiting_approval', 'the approval to be pending');
    const digest = (await flostraJson('executions', 'get', executionId)).pendingApproval.actionDigest as string;

    const blind = await flostra('executions', 'approve', executionId, 'check');
    expect(blind.code).toBe(2);
    expect(blind.stderr).toContain('"amount": 12');
    expect(blind.stderr).toContain(`--digest ${digest}`);
    const wrong = await flostra('executions', 'approve', executionId, 'check', '--digest', '0'.repeat(64));
    expect(wrong).toMatchObject({ code: 5, stderr: expect.stringContaining('[approval_mismatch]') });
    expect(await statusOf(executionId)).toBe('awaiting_approval');

    const approved = await flostra('executions', 'approve', executionId, 'check', '--digest', digest, '--comment', 'fine');
    expect(approved).toMatchObject({ code: 0, stdout: expect.stringContaining(`approved check of ${executionId}`) });
    const watched = await flostra('watch', executionId);
    expect(watched.code).toBe(0);
    expect(said(watched.stdout)).toEqual(expect.arrayContaining(['node check approved by alice: fine', 'node ship succeeded: null']));
  });

  it('exits 4 on a bad token, 3 on an unknown execution, 6 on an unreachable server, each saying why', async () => {
    const badToken = await spawnCli(['executions', 'list'], { FLOSTRA_TOKEN: 'not-a-token' }).result;
    expect(badToken).toMatchObject({ code: 4, stdout: '' });
    expect(badToken.stderr).toContain('[unauthenticated]');
    const badTokenJson = await spawnCli(['executions', 'list', '-o', 'json'], { FLOSTRA_TOKEN: 'not-a-token' }).result;
    expect(JSON.parse(badTokenJson.stderr)).toMatchObject({ error: { code: 'unauthenticated', status: 401 }, exitCode: 4 });
    const forbidden = await spawnCli(['workflows', 'publish', 'hello.yaml'], { FLOSTRA_TOKEN: TOKENS.viewerA }).result;
    expect(forbidden).toMatchObject({ code: 4, stderr: expect.stringContaining('[forbidden]') });

    const unknown = await flostra('executions', 'get', '7b0e3a52-6a4c-4a8e-9d2c-0a6f1e0b9c11');
    expect(unknown).toMatchObject({ code: 3, stderr: expect.stringContaining('[not_found]') });
    expect((await flostra('watch', '7b0e3a52-6a4c-4a8e-9d2c-0a6f1e0b9c11')).code).toBe(3);

    const port = await closedPort();
    const down = await spawnCli(['executions', 'list'], { FLOSTRA_URL: `http://127.0.0.1:${port}` }).result;
    expect(down).toMatchObject({ code: 6, stderr: expect.stringContaining(`cannot reach the Flostra server at http://127.0.0.1:${port}`) });

    const invalid = await flostra('workflows', 'publish', file('invalid.json', '{"nodes":[{"id":"a","type":"teleport"}]}'));
    expect(invalid).toMatchObject({ code: 2, stderr: expect.stringContaining('nodes[0].type') });
  });

  it('keeps watching through a restart of the server, printing no event twice', async () => {
    const { executionId } = await flostraJson('run', 'gate');
    const watch = spawnCli(['watch', executionId]);
    await eventually(() => watch.outcome.stdout.includes('node check awaits approval'), 'the watch to show the pending approval');

    // Cut the stream, restart the app on the same database, and decide while the watch reconnects.
    relay.dropAll();
    await app.close();
    relay.dropAll();
    app = await startTestApp('postgres', {}, { worker: true, databaseUrl: app.databaseUrl! });
    api = client(app.url);
    relay.targetPort = Number(new URL(app.url).port);
    const digest = (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.adminA })).body.pendingApproval.actionDigest;
    const decided = await api.post(`/v1/executions/${executionId}/approvals/check`, {
      token: TOKENS.adminA,
      body: { decision: 'approve', actionDigest: digest },
    });
    expect(decided.status).toBe(202);

    const { code, stdout, stderr } = await watch.result;
    expect(code).toBe(0);
    expect(stderr).toContain('reconnecting');
    const out = lines(stdout);
    expect(out.length).toBeGreaterThan(0);
    expect(new Set(out).size).toBe(out.length);
    expect(said(stdout)).toEqual(
      expect.arrayContaining([
        'node check awaits approval, action digest ' + digest,
        'node check approved by alice',
        'node ship succeeded: null',
        'execution succeeded: {"ship":null}',
      ]),
    );
    // Everything the execution recorded came through once, in the order of its history.
    const history = (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.adminA })).body.events as {
      type: string;
    }[];
    const nodeLines = said(stdout).filter((line) => line.startsWith('node ') || line.startsWith('execution '));
    const nodeEvents = history.filter((e) => /^(Node|Execution|Approval)/.test(e.type));
    expect(nodeLines).toHaveLength(nodeEvents.length);
  });

  it("tails the workspace's live events, one JSON line each, until Ctrl-C (exit 130)", async () => {
    const tail = spawnCli(['tail', '--output', 'json']);
    // The workspace stream starts with the next event: wait until the tail is connected.
    let executionId = '';
    await eventually(
      async () => {
        executionId = (await flostraJson('run', 'hello', '--input', '{"name":"tail"}')).executionId;
        await eventually(async () => (await statusOf(executionId)) === 'succeeded', 'the run to succeed');
        return tail.outcome.stdout.includes(executionId);
      },
      { what: 'the tail to show a run', timeoutMs: 20_000 },
    );
    await eventually(
      () => tail.outcome.stdout.includes('"ExecutionSucceeded"') && tail.outcome.stdout.includes(executionId),
      'the end of the run',
    );
    tail.child.kill('SIGINT');
    const { code, stdout } = await tail.result;
    expect(code).toBe(130);
    const events = lines(stdout).map((line) => JSON.parse(line) as { executionId: string; type: string; workspaceId: string });
    const ofRun = events.filter((e) => e.executionId === executionId).map((e) => e.type);
    expect(ofRun).toEqual(expect.arrayContaining(['NodeStarted', 'NodeSucceeded', 'ExecutionSucceeded']));
    expect(events.every((e) => e.workspaceId === 'ws-a')).toBe(true);
  });
});
