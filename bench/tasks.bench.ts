import { spawn } from 'node:child_process';
import type { IncomingMessage, Server } from 'node:http';
import { cpus } from 'node:os';
import { createWorker } from '../src/worker/runtime/create-worker.js';
import { followExecutionEnds, openBenchStack, processCpuSeconds, publishBenchWorkflow, startBenchApp } from './bench-stack.js';
import { STACK_WARMUP_SECONDS, closedLoop, post } from './bench-support.js';
import { perExecution } from './sql-traffic.js';

/**
 * What a `task` step costs beside a built-in one: the 4-node diamond of bench:e2e (A→B, A→C,
 * B+C→D) once with `noop` nodes, run by Flostra's worker, and once with `task` nodes, run by the
 * worker SDK (`flostra/worker`) in a process of its own that polls over HTTP. One stack for both
 * (real PostgreSQL and Kafka, every role in this process, as bench:e2e's `full`), closed loop at
 * each concurrency, the two variants interleaved in slices (A B A B …) so that the machine's drift
 * falls on both alike. Prints one JSON document on stdout; progress on stderr.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const SLICES = Number(process.env.BENCH_SLICES ?? 2);
const WARMUP_SECONDS = 2;
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map(Number);
const TASK_WORKER_CONCURRENCY = Number(process.env.BENCH_TASK_WORKER_CONCURRENCY ?? 128);
const TOKEN = 'bench-token';
const TASK_TOKEN = 'bench-task-worker-token';
const QUEUE = 'bench';
const AIM = 1.5;
const TIMELINE_EXECUTIONS = Number(process.env.BENCH_TIMELINE_EXECUTIONS ?? 20);

const EDGES = [
  { from: 'a', to: 'b' },
  { from: 'a', to: 'c' },
  { from: 'b', to: 'd' },
  { from: 'c', to: 'd' },
];
const WORKFLOWS = {
  builtin: { nodes: ['a', 'b', 'c', 'd'].map((id) => ({ id, type: 'noop' })), edges: EDGES },
  task: { nodes: ['a', 'b', 'c', 'd'].map((id) => ({ id, type: 'task', config: { queue: QUEUE } })), edges: EDGES },
};
type Variant = keyof typeof WORKFLOWS;
const VARIANTS: Variant[] = ['builtin', 'task'];

const log = (message: string) => process.stderr.write(`[bench:tasks] ${message}\n`);

/** The SDK worker, `node dist/bench/tasks-worker.js`, ready once it polls. */
async function startTaskWorkerProcess(apiUrl: string) {
  const script = new URL('./tasks-worker.js', import.meta.url).pathname;
  // `node --cpu-prof …` profiles the SDK worker too.
  const profiling = process.execArgv.filter((arg) => arg.startsWith('--cpu-prof'));
  const child = spawn(process.execPath, [...profiling, script], {
    env: {
      PATH: process.env.PATH,
      FLOSTRA_API_URL: apiUrl,
      FLOSTRA_TOKEN: TASK_TOKEN,
      FLOSTRA_WORKSPACE: 'bench',
      FLOSTRA_QUEUE: QUEUE,
      FLOSTRA_CONCURRENCY: String(TASK_WORKER_CONCURRENCY),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the task worker did not start in 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`the task worker exited (${code})`)));
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('task worker polling')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  child.stdout.resume();
  const pid = child.pid!;
  return {
    cpuSeconds: () => processCpuSeconds(pid),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function main() {
  log('starting PostgreSQL and Kafka');
  const stack = await openBenchStack({ mode: 'full', database: 'bench_tasks', clientId: 'bench' });
  const { store, bus } = stack;
  // Appends to execution streams: each is one command's decision (one round trip's transaction).
  let appends = 0;
  const append = store.appendToStream.bind(store);
  store.appendToStream = (streamId, ...rest) => {
    if (streamId.startsWith('execution-')) appends++;
    return append(streamId, ...rest);
  };
  const { app, url, logger } = await startBenchApp(stack, [
    { token: TOKEN, subject: 'bench', workspaces: { bench: 'admin' }, global: ['worker'] },
    { token: TASK_TOKEN, subject: 'bench-task-worker', workspaces: { bench: 'task-worker' }, global: [] },
  ]);
  // HTTP requests the app answered, and those of the task protocol (polls, heartbeats, completions).
  const requests = { all: 0, task: 0 };
  (app.getHttpServer() as Server).on('request', (req: IncomingMessage) => {
    requests.all++;
    if (/^\/v1\/(tasks\/|workspaces\/[^/]+\/task-queues\/)/.test(req.url ?? '')) requests.task++;
  });
  const worker = createWorker({ bus, apiUrl: url, token: TOKEN, logger, concurrency: 16, egressAllow: [] });
  await worker.start();
  const taskWorker = await startTaskWorkerProcess(url);
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  for (const variant of VARIANTS) await publishBenchWorkflow(url, TOKEN, `diamond-${variant}`, WORKFLOWS[variant]);

  const waiters = new Map<string, (type: string) => void>();
  const follower = await followExecutionEnds(
    store,
    (ends) => {
      for (const { executionId, type } of ends) {
        waiters.get(executionId)?.(type);
        waiters.delete(executionId);
      }
    },
    log,
  );

  /** The executions `once` started, newest last (for the timeline). */
  const startedIds: string[] = [];

  /**
   * Where one task diamond's time goes, one at a time: the mean gap between consecutive events
   * of its stream (by the store's recordedAt), per pair of event types, largest first.
   */
  async function taskTimeline(count: number, run: () => Promise<number>) {
    const gaps = new Map<string, number[]>();
    let total = 0;
    let attempts = 0;
    for (let i = 0; i < count; i++) {
      total += await run();
      const events = await store.readStream(`execution-${startedIds.at(-1)}`);
      attempts += events.filter((e) => e.type === 'AttemptScheduled').length;
      for (let j = 1; j < events.length; j++) {
        const key = `${events[j - 1].type} → ${events[j].type}`;
        const list = gaps.get(key) ?? [];
        list.push(Date.parse(events[j].recordedAt) - Date.parse(events[j - 1].recordedAt));
        gaps.set(key, list);
      }
    }
    const steps = [...gaps.entries()]
      .map(([step, list]) => ({
        step,
        perExecution: round(list.length / count, 2),
        meanMs: round(list.reduce((a, b) => a + b, 0) / list.length, 1),
      }))
      .map((s) => ({ ...s, msPerExecution: round(s.meanMs * s.perExecution, 1) }))
      .sort((a, b) => b.msPerExecution - a.msPerExecution);
    return {
      executions: count,
      meanLatencyMs: round(total / count, 1),
      attemptsPerExecution: round(attempts / count, 2),
      steps: steps.filter((s) => s.msPerExecution >= 0.5),
    };
  }

  const once = (variant: Variant) => async (): Promise<number> => {
    const started = performance.now();
    const response = await post(`${url}/v1/workspaces/bench/workflows/diamond-${variant}/executions`, headers, '{}');
    if (response.status !== 201) throw new Error(`start answered ${response.status}: ${response.body}`);
    const { executionId } = JSON.parse(response.body) as { executionId: string };
    startedIds.push(executionId);
    if (startedIds.length > 1_000) startedIds.splice(0, 500);
    const end = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`execution ${executionId} did not end in 60 s`)), 60_000);
      waiters.set(executionId, (type) => {
        clearTimeout(timer);
        resolve(type);
      });
    });
    if (end !== 'ExecutionSucceeded') throw new Error(`execution ${executionId} of diamond-${variant} ended ${end}`);
    return performance.now() - started;
  };

  async function slice(variant: Variant, concurrency: number, seconds: number) {
    const before = taskWorker.cpuSeconds();
    const [appendsBefore, sqlBefore, requestsBefore] = [appends, stack.sqlTraffic.total(), { ...requests }];
    const result = await closedLoop(concurrency, seconds, once(variant));
    return {
      ...result,
      seconds,
      httpRequests: requests.all - requestsBefore.all,
      taskRequests: requests.task - requestsBefore.task,
      taskWorkerCpu: taskWorker.cpuSeconds() - before,
      appends: appends - appendsBefore,
      sql: perExecution(sqlBefore, stack.sqlTraffic.total(), result.executions),
    };
  }

  log(`warming the stack up at 16 concurrent for ${STACK_WARMUP_SECONDS}s, each variant`);
  for (const variant of VARIANTS) await slice(variant, 16, STACK_WARMUP_SECONDS / 2);
  const cells = [];
  for (const concurrency of CONCURRENCY) {
    for (const variant of VARIANTS) await slice(variant, concurrency, WARMUP_SECONDS);
    const slices: Record<Variant, Awaited<ReturnType<typeof slice>>[]> = { builtin: [], task: [] };
    for (let i = 0; i < SLICES; i++) {
      for (const variant of i % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
        log(`concurrency ${concurrency}, ${variant}, slice ${i + 1} of ${SLICES}`);
        slices[variant].push(await slice(variant, concurrency, SECONDS / SLICES));
      }
    }
    const summary = (variant: Variant) => {
      const list = slices[variant];
      const executions = list.reduce((sum, s) => sum + s.executions, 0);
      const seconds = list.reduce((sum, s) => sum + s.seconds, 0);
      const mean = (pick: (s: (typeof list)[number]) => number) => round(list.reduce((sum, s) => sum + pick(s), 0) / list.length, 5);
      return {
        executions,
        executionsPerSec: round(executions / seconds, 1),
        executionAppendsPerExecution: round(list.reduce((sum, s) => sum + s.appends, 0) / executions, 2),
        httpRequestsPerExecution: round(list.reduce((sum, s) => sum + s.httpRequests, 0) / executions, 2),
        taskRequestsPerExecution: round(list.reduce((sum, s) => sum + s.taskRequests, 0) / executions, 2),
        sqlRoundTripsPerExecution: mean((s) => s.sql.roundTrips),
        latencyMs: { p50: mean((s) => s.latencyMs.p50), p90: mean((s) => s.latencyMs.p90), p99: mean((s) => s.latencyMs.p99) },
        cpuSecondsPerExecution: {
          flostraProcess: mean((s) => s.processCpu),
          ...(variant === 'task' ? { taskWorkerProcess: round(list.reduce((sum, s) => sum + s.taskWorkerCpu, 0) / executions, 5) } : {}),
          wholeMachine: mean((s) => s.machineCpu),
        },
      };
    };
    const builtin = summary('builtin');
    const task = summary('task');
    const ratio = {
      throughput: round(builtin.executionsPerSec / task.executionsPerSec, 2),
      p50: round(task.latencyMs.p50 / builtin.latencyMs.p50, 2),
      machineCpu: round(task.cpuSecondsPerExecution.wholeMachine / builtin.cpuSecondsPerExecution.wholeMachine, 2),
    };
    log(
      `concurrency ${concurrency}: builtin ${builtin.executionsPerSec}/s, task ${task.executionsPerSec}/s, ratio ${JSON.stringify(ratio)}`,
    );
    cells.push({ concurrency, builtin, task, ratio });
  }

  log(`timeline: ${TIMELINE_EXECUTIONS} task diamonds one at a time`);
  const timeline = await taskTimeline(TIMELINE_EXECUTIONS, once('task'));

  await taskWorker.stop();
  await worker.stop();
  await app.close();
  await follower.stop();
  await stack.close();

  const worst = Math.max(...cells.map((c) => Math.max(c.ratio.throughput, c.ratio.p50)));
  const report = {
    benchmark:
      'diamond workflow (A→B, A→C, B+C→D) of 4 task nodes run by the worker SDK in its own process, beside the same diamond of 4 noop nodes, closed loop, start→ExecutionSucceeded',
    stack: 'real PostgreSQL + real Kafka (KRaft, one broker), every role in one Node process; the SDK task worker in another',
    secondsPerCell: SECONDS,
    slicesPerCell: SLICES,
    warmUpSeconds: { stackAt16: STACK_WARMUP_SECONDS, eachCell: WARMUP_SECONDS },
    taskWorkerConcurrency: TASK_WORKER_CONCURRENCY,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
    ratioMeaning:
      'throughput: builtin executions/s ÷ task executions/s; p50: task p50 ÷ builtin p50; machineCpu: per execution, task ÷ builtin',
    aim: { atMost: AIM, worstRatio: worst, met: worst <= AIM },
    cells,
    timeline,
  };
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exit(0);
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:tasks failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
