import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Task workers of users' own, in processes of their own, against the whole of Flostra (real
 * PostgreSQL, real Kafka, Flostra's worker running the graphs): the SDK (`flostra/worker`, as
 * built in dist/) and the Python example worker.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SDK_WORKER = join(ROOT, 'test', 'sdk', 'fixtures', 'sdk-worker-process.mjs');
const PYTHON_WORKER = join(ROOT, 'examples', 'python-worker', 'worker.py');
const TASK_TOKEN = TOKENS.taskWorkerA;

type Report = { taskId: string; executionId: string; nodeId: string; attempt: number; workerId: string; input: unknown; reason?: string };
type Event = { type: string; data: Record<string, any> };

/** Where the SDK worker processes report what their handlers saw. */
class Sink {
  readonly reports: Array<Report & { kind: string }> = [];
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let text = '';
      req.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      req.on('end', () => {
        this.reports.push({ kind: (req.url ?? '/').slice(1), ...(JSON.parse(text) as Report) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  of(kind: string, executionId: string): Report[] {
    return this.reports.filter((r) => r.kind === kind && r.executionId === executionId);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

describe('task workers in processes of their own (real Postgres, real Kafka)', () => {
  const sink = new Sink();
  const children: ChildProcess[] = [];
  let bus: KafkaBus;
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist', 'src', 'sdk', 'worker.js')))
      throw new Error('dist/ is missing: run `npm run build` (npm test does)');
    await sink.start();
    bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'task-workers-e2e', logger: createLogger({ level: 'silent' }) });
    t = await startTestApp('postgres', {}, { bus, worker: { concurrency: 4 } });
    api = client(t.url);
  }, 60_000);
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });
  afterAll(async () => {
    await t?.close();
    await bus?.close();
    await sink.stop();
  });

  function spawnLogged(command: string, args: string[], env: Record<string, string>, ready: string): Promise<ChildProcess> {
    const child = spawn(command, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    return eventually(() => output.includes(ready) && child, { what: () => `${args[0]} to start:\n${output}`, timeoutMs: 20_000 });
  }

  const sdkWorker = (queue: string, workerId: string, mode: 'hold' | 'echo') =>
    spawnLogged(
      process.execPath,
      [SDK_WORKER],
      {
        FLOSTRA_API_URL: t.url,
        FLOSTRA_TOKEN: TASK_TOKEN,
        FLOSTRA_WORKSPACE: 'ws-a',
        FLOSTRA_QUEUE: queue,
        FLOSTRA_WORKER_ID: workerId,
        SINK_URL: sink.url,
        FIXTURE_MODE: mode,
      },
      'sdk worker polling',
    );

  async function publishAndStart(name: string, graph: object, input: object = {}): Promise<string> {
    const put = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    expect([200, 201]).toContain(put.status);
    const started = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: { input } });
    expect(started.status).toBe(201);
    return started.body.executionId as string;
  }

  const view = async (executionId: string) => (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
  const ended = (executionId: string, timeoutMs = 30_000) =>
    eventually(
      async () => {
        const v = await view(executionId);
        return ['succeeded', 'failed', 'timed_out', 'cancelled'].includes(v.status) ? v : false;
      },
      { what: `execution ${executionId} to end`, timeoutMs },
    );

  it('(b) an SDK worker SIGKILLed mid-task: the lease expires, the retry runs on another worker, the execution succeeds', async () => {
    const first = await sdkWorker('killed', 'sdk-killed', 'hold');
    const executionId = await publishAndStart(
      'task-killed',
      {
        nodes: [
          {
            id: 'work',
            type: 'task',
            config: { queue: 'killed', input: '{ "order": input.order }', heartbeatTimeoutMs: 2_000 },
            retry: { maxAttempts: 2, initialIntervalMs: 0, maxIntervalMs: 0 },
          },
        ],
      },
      { order: 17 },
    );
    await eventually(() => sink.of('started', executionId).length === 1, 'the task to start on the first worker');
    first.kill('SIGKILL');
    await sdkWorker('killed', 'sdk-replacement', 'echo');

    const done = await ended(executionId);
    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ work: { echoed: { order: 17 }, by: 'sdk-replacement', attempt: 2 } });
    // The side effect ran twice at most, the second time as the retry, on the other worker.
    expect(sink.of('started', executionId).map((r) => [r.workerId, r.attempt, r.input])).toEqual([
      ['sdk-killed', 1, { order: 17 }],
      ['sdk-replacement', 2, { order: 17 }],
    ]);
    const events = await history(executionId);
    const tasks = (type: string) => events.filter((e) => e.type === type).map((e) => e.data);
    expect(tasks('TaskScheduled').map((d) => d.taskAttempt)).toEqual([1, 2]);
    expect(tasks('TaskClaimed').map((d) => d.workerId)).toEqual(['sdk-killed', 'sdk-replacement']);
    expect(tasks('TaskTimedOut').map((d) => d.reason)).toEqual(['lease_expired']);
    expect(tasks('TaskSucceeded')).toHaveLength(1);
  });

  it('(d) cancel while a task runs: the handler’s signal fires and the execution ends cancelled', async () => {
    await sdkWorker('cancelled', 'sdk-cancel', 'hold');
    const executionId = await publishAndStart('task-cancelled', {
      nodes: [{ id: 'slow', type: 'task', config: { queue: 'cancelled', heartbeatTimeoutMs: 1_500 } }],
    });
    await eventually(() => sink.of('started', executionId).length === 1, 'the task to start');
    const cancel = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: { reason: 'changed my mind' } });
    expect(cancel.status).toBe(202);
    await eventually(() => sink.of('aborted', executionId).length === 1, 'the handler’s signal to fire');
    expect(sink.of('aborted', executionId)[0].reason).toBe('TaskCancelledError');
    expect((await ended(executionId)).status).toBe('cancelled');
  });

  it('the Python example worker runs a workflow of task nodes to success', async () => {
    await spawnLogged(
      'python3',
      [PYTHON_WORKER],
      {
        FLOSTRA_API_URL: t.url,
        FLOSTRA_TOKEN: TASK_TOKEN,
        FLOSTRA_WORKSPACE: 'ws-a',
        FLOSTRA_QUEUE: 'python',
        FLOSTRA_WORKER_ID: 'py-e2e',
      },
      'python task worker started',
    );
    const executionId = await publishAndStart(
      'python-words',
      {
        nodes: [
          { id: 'title', type: 'task', config: { queue: 'python', input: '{ "text": input.title }' } },
          { id: 'body', type: 'task', config: { queue: 'python', input: '{ "text": input.body }' } },
          {
            id: 'total',
            type: 'task',
            config: { queue: 'python', input: '{ "text": $join([$string(nodes.title.words), $string(nodes.body.words)], " ") }' },
          },
        ],
        edges: [
          { from: 'title', to: 'total' },
          { from: 'body', to: 'total' },
        ],
      },
      { title: 'task queues', body: 'workers in any language poll over HTTP' },
    );
    const done = await ended(executionId);
    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ total: { words: 2, longest: '2', by: 'python' } });
    const events = await history(executionId);
    expect(events.filter((e) => e.type === 'TaskSucceeded')).toHaveLength(3);
    expect(new Set(events.filter((e) => e.type === 'TaskClaimed').map((e) => e.data.workerId))).toEqual(new Set(['py-e2e']));
  });
});
