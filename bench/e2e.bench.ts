import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { Bus } from '../src/core/bus.port.js';
import type { createLogger } from '../src/core/logger.js';
import { METRICS, type Metrics } from '../src/core/metrics.port.js';
import { createWorker } from '../src/worker/runtime/create-worker.js';
import {
  type BenchApp,
  followExecutionEnds,
  openBenchStack,
  processCpuSeconds,
  publishBenchWorkflow,
  startBenchApp,
} from './bench-stack.js';
import { STACK_WARMUP_SECONDS, closedLoop, post } from './bench-support.js';
import { perExecution } from './sql-traffic.js';

/**
 * End-to-end throughput and latency: a 4-node diamond of `noop` nodes (A→B, A→C, B+C→D)
 * started over HTTP and run by a worker through dispatcher, bus and ingestor, closed loop at
 * several concurrencies. Completion is observed on the event store's own subscription, so the
 * measurement adds no polling. Prints one JSON document on stdout; progress on stderr.
 *
 * Modes: `full` (Postgres + Kafka, every role in this process), `split` (the same, but the
 * worker runs in a process of its own, `FLOSTRA_ROLES=worker node dist/src/main.js`, as
 * docker-compose.yml deploys it), `embedded` (PGlite + in-process bus, one process).
 *
 * Each stack first runs STACK_WARMUP_SECONDS at 16 concurrent (see bench-support.ts), then each
 * cell warms up at its own concurrency before it is measured.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map(Number);
const MODES = (process.env.BENCH_MODES ?? 'full,split,embedded').split(',');
/** Attempts the worker of `full` and `embedded` runs at once. */
const WORKER_CONCURRENCY = Number(process.env.BENCH_WORKER_CONCURRENCY ?? 16);
const TOKEN = 'bench-token';
/** A last cell at 16 concurrent that counts database round trips by the source file asking (0: none). */
const BY_CALLER_SECONDS = Number(process.env.BENCH_SQL_BY_CALLER_SECONDS ?? 5);

const DIAMOND = {
  nodes: ['a', 'b', 'c', 'd'].map((id) => ({ id, type: 'noop' })),
  edges: [
    { from: 'a', to: 'b' },
    { from: 'a', to: 'c' },
    { from: 'b', to: 'd' },
    { from: 'c', to: 'd' },
  ],
};

const log = (message: string) => process.stderr.write(`[bench:e2e] ${message}\n`);

async function runMode(mode: string) {
  log(`${mode}: starting the stack`);
  const stack = await openBenchStack(mode === 'embedded' ? { mode } : { mode: 'full', database: 'bench_e2e', clientId: 'bench' });
  const { app, url, logger, workerRoute } = await startBenchApp(stack, [
    { token: TOKEN, subject: 'bench', workspaces: { bench: 'admin' }, global: ['worker'] },
  ]);
  const route = workerRoute(TOKEN);
  const worker =
    mode === 'split'
      ? await startWorkerProcess(url, stack.brokers)
      : await startInProcessWorker(stack.bus, route, logger, app.get(METRICS));
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const published = countPublished(stack.bus);
  await publishBenchWorkflow(url, TOKEN, 'diamond', DIAMOND);

  const waiters = new Map<string, () => void>();
  // Ends seen before their start's answer was read (a claim in process can finish a diamond first).
  const early = new Set<string>();
  const follower = await followExecutionEnds(
    stack.store,
    (ends) => {
      for (const { executionId } of ends) {
        const waiter = waiters.get(executionId);
        if (waiter === undefined) early.add(executionId);
        waiters.delete(executionId);
        waiter?.();
      }
    },
    log,
  );

  async function oneExecution(): Promise<number> {
    const started = performance.now();
    const response = await post(`${url}/v1/workspaces/bench/workflows/diamond/executions`, headers, '{}');
    if (response.status !== 201) throw new Error(`start answered ${response.status}: ${response.body}`);
    const { executionId } = JSON.parse(response.body) as { executionId: string };
    if (early.delete(executionId)) return performance.now() - started;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`execution ${executionId} did not finish in 60 s`)), 60_000);
      waiters.set(executionId, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return performance.now() - started;
  }

  async function measure(concurrency: number, seconds: number) {
    const servicesBefore = servicesCpuSeconds();
    const workerBefore = worker.cpuSeconds();
    const sqlBefore = stack.sqlTraffic.total();
    const publishedBefore = published.snapshot();
    const { processCpu, machineCpu, ...result } = await closedLoop(concurrency, seconds, oneExecution);
    const workerCpu = worker.cpuSeconds() - workerBefore;
    const services = servicesCpuSeconds();
    return {
      ...result,
      sqlPerExecution: perExecution(sqlBefore, stack.sqlTraffic.total(), result.executions),
      busMessagesPerExecution: published.perExecution(publishedBefore, result.executions),
      cpuSecondsPerExecution: {
        flostraProcess: processCpu,
        ...(mode === 'split' ? { workerProcess: Math.round((workerCpu / result.executions) * 1e5) / 1e5 } : {}),
        // The stack's services that are children of this process: the Kafka JVM (`java`); PostgreSQL runs detached (pg_ctl).
        ...Object.fromEntries(
          [...services]
            .filter(([name]) => name !== 'node')
            .map(([name, cpu]) => [name, Math.round(((cpu - (servicesBefore.get(name) ?? 0)) / result.executions) * 1e5) / 1e5]),
        ),
        wholeMachine: machineCpu,
      },
    };
  }

  log(`${mode}: warming the stack up at 16 concurrent for ${STACK_WARMUP_SECONDS}s`);
  await measure(16, STACK_WARMUP_SECONDS);
  const results = [];
  for (const concurrency of CONCURRENCY) {
    log(`${mode}: concurrency ${concurrency}, warm-up`);
    await measure(concurrency, WARMUP_SECONDS);
    log(`${mode}: concurrency ${concurrency}, measuring ${SECONDS}s`);
    results.push(await measure(concurrency, SECONDS));
  }
  const sqlByCaller = BY_CALLER_SECONDS > 0 ? await countByCaller() : undefined;
  await worker.stop();
  await app.close();
  await follower.stop();
  await stack.close();
  return {
    mode,
    stack: STACKS[mode],
    /** Where the worker's results went: to the ingestor in process (FLOSTRA_WORKER_RESULTS, see docs/operations.md) or over the bus. */
    workerResults: mode !== 'split' && 'results' in route ? 'in-process' : 'bus',
    results,
    ...(sqlByCaller === undefined ? {} : { sqlPerExecutionByCaller: sqlByCaller }),
  };

  /** Round trips, statements and transactions per execution at 16 concurrent, by the source file that asked. */
  async function countByCaller() {
    log(`${mode}: counting database round trips by caller at 16 concurrent for ${BY_CALLER_SECONDS}s`);
    const zero = { roundTrips: 0, statements: 0, transactions: 0, wakeUps: 0 };
    stack.sqlTraffic.startByCaller();
    const { executions } = await closedLoop(16, BY_CALLER_SECONDS, oneExecution);
    const counts = [...stack.sqlTraffic.stopByCaller()]
      .map(([caller, count]) => [caller, perExecution(zero, count, executions)] as const)
      .sort(([, a], [, b]) => b.roundTrips - a.roundTrips);
    return { concurrency: 16, executions, callers: Object.fromEntries(counts) };
  }
}

const STACKS: Record<string, string> = {
  embedded: 'PGlite (in memory) + in-process bus, one process',
  full: 'real PostgreSQL 15 + real Kafka (KRaft, one broker), api+dispatcher+ingestor+projector+watchdog+worker in one Node process',
  split:
    'real PostgreSQL 15 + real Kafka (KRaft, one broker), api+dispatcher+ingestor+projector+watchdog in one Node process, the worker in another',
};

/**
 * Counts the messages this process publishes on `bus`, by topic (the split mode's worker process
 * publishes on a bus of its own, not counted here).
 */
function countPublished(bus: Bus) {
  const counts = new Map<string, number>();
  const publish = bus.publish.bind(bus);
  bus.publish = (topic, messages) => {
    counts.set(topic, (counts.get(topic) ?? 0) + messages.length);
    return publish(topic, messages);
  };
  return {
    snapshot: () => new Map(counts),
    perExecution: (before: ReadonlyMap<string, number>, executions: number) =>
      Object.fromEntries(
        [...counts].map(([topic, n]) => [
          topic,
          executions > 0 ? Math.round(((n - (before.get(topic) ?? 0)) / executions) * 100) / 100 : 0,
        ]),
      ),
  };
}

/**
 * CPU seconds (user + system, with reaped children's) used so far by this process's descendants
 * still alive, by command name: a shared machine's other work is not in them.
 */
function servicesCpuSeconds(): Map<string, number> {
  const stats = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
        const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
        const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
        return [{ pid: Number(pid), ppid: Number(fields[1]), name, cpu: ticks / 100 }];
      } catch {
        return []; // exited meanwhile
      }
    });
  const byName = new Map<string, number>();
  const below = new Set([process.pid]);
  // Parents come before their children in most cases; go round until nothing more is found.
  for (let grew = true; grew;) {
    grew = false;
    for (const stat of stats) {
      if (below.has(stat.pid) || !below.has(stat.ppid)) continue;
      below.add(stat.pid);
      byName.set(stat.name, (byName.get(stat.name) ?? 0) + stat.cpu);
      grew = true;
    }
  }
  return byName;
}

interface BenchWorker {
  /** CPU seconds the worker used so far, when it runs in a process of its own (0 in this one). */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

async function startInProcessWorker(
  bus: Bus,
  route: ReturnType<BenchApp['workerRoute']>,
  logger: ReturnType<typeof createLogger>,
  metrics: Metrics,
): Promise<BenchWorker> {
  // The app's metrics, as main.ts gives a worker that shares its process.
  const worker = createWorker({ ...route, bus, logger, concurrency: WORKER_CONCURRENCY, egressAllow: [], metrics });
  await worker.start();
  return { cpuSeconds: () => 0, stop: () => worker.stop() };
}

/** The production worker, `FLOSTRA_ROLES=worker node dist/src/main.js`, ready once it has joined its consumer group. */
async function startWorkerProcess(apiUrl: string, brokers: string[]): Promise<BenchWorker> {
  const main = new URL('../src/main.js', import.meta.url).pathname;
  // With this process's Node flags (the young generation's size, as `npm run worker` sets it).
  const child: ChildProcess = spawn(process.execPath, [...process.execArgv, main], {
    env: {
      PATH: process.env.PATH,
      FLOSTRA_ROLES: 'worker',
      FLOSTRA_API_URL: apiUrl,
      FLOSTRA_WORKER_TOKEN: TOKEN,
      FLOSTRA_WORKER_CONCURRENCY: '16',
      KAFKA_BROKERS: brokers.join(','),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`the worker process did not start in 60 s:\n${seen}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`the worker process exited (${code}):\n${seen}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-4_000);
      if (seen.includes('is consuming dispatches')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  child.stdout!.resume();
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
  const report = {
    benchmark: 'diamond workflow (4 noop nodes: A→B, A→C, B+C→D), closed loop, start→ExecutionSucceeded',
    secondsPerCell: SECONDS,
    warmUpSeconds: { stackAt16: STACK_WARMUP_SECONDS, eachCell: WARMUP_SECONDS },
    /** How full's and embedded's worker reaches the api in their one process (split's always over HTTP). */
    workerTransport: process.env.FLOSTRA_WORKER_TRANSPORT === 'http' ? 'http' : 'in-process',
    /** Whether full's and embedded's dispatcher hands dispatches to that worker in memory (FLOSTRA_WORKER_DISPATCH). */
    workerDispatch: process.env.FLOSTRA_WORKER_DISPATCH === 'bus' ? 'bus' : 'in-process',
    workerConcurrency: WORKER_CONCURRENCY,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
    modes: [] as unknown[],
  };
  for (const mode of MODES) report.modes.push(await runMode(mode));
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:e2e failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
