import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { TokenEntry } from '../src/auth/tokens-file.schema.js';
import { InProcessBus } from '../src/bus/in-process/in-process-bus.js';
import { loadConfig } from '../src/config/config.js';
import type { Clock } from '../src/core/clock.port.js';
import { randomIds } from '../src/core/ids.js';
import { ExecutionStreams } from '../src/executions/application/execution-streams.js';
import type { ExecutionCommand } from '../src/executions/domain/execution.commands.js';
import type { WorkflowSnapshot } from '../src/executions/domain/execution.events.js';
import { createWorker } from '../src/worker/runtime/create-worker.js';
import { EXECUTION_ENDS, openBenchStack, startBenchApp } from './bench-stack.js';
import { type CpuProfile, summarizeCpuProfile } from './peers-profile.js';

/**
 * 10,000 durable timers due in the same second on the embedded default (PGlite persisted in a
 * data directory, the in-process bus, every role and a worker in this process). TIMERS executions are seeded
 * suspended on a `delay` whose `until` is the same instant, through the decider (one append per
 * execution: start, claim, the worker's wait, the suspension), as the api and ingestor would
 * write them, before the app starts. Once the timer role's table holds them all and the app has
 * settled, the app restarts (so no state of these executions is in memory, as after a long wait)
 * and, settled again, has its clock set LEAD_MS before that instant (ten seconds by default: the
 * timer role reads the executions of timers due within five seconds ahead, as it would while
 * they came due live; one second or less leaves it no time to). Two figures, each from the instant to the store time of the last
 * such event: every timer fired (its `TimerFired` appended), and every execution went on (the
 * resumed attempt dispatched, run by the worker, the execution `ExecutionSucceeded`).
 * Prints one JSON document on stdout; progress on stderr. With BENCH_PROFILE=<file>, a V8 CPU
 * profile of the process from the due instant until the last firing goes to that file, and the
 * report adds its summary and the database calls of that span by caller.
 */
const TIMERS = Number(process.env.BENCH_TIMERS ?? 10_000);
const PROFILE = process.env.BENCH_PROFILE;
const LEAD_MS = Number(process.env.BENCH_TIMERS_LEAD_MS ?? 10_000);
const SEED_CONCURRENCY = 16;
const AIM_MS = 5_000;
const TOKEN = 'bench-token';
const log = (message: string) => process.stderr.write(`[bench:timers] ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The real clock moved by an offset the bench sets. */
class MovableClock implements Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

function workflow(until: string): WorkflowSnapshot {
  return {
    workflowId: randomUUID(),
    name: 'timers',
    revision: 1,
    digest: 'bench',
    graph: {
      nodes: [
        { id: 'pause', type: 'delay', config: { until } },
        { id: 'after', type: 'noop', config: {} },
      ],
      edges: [{ from: 'pause', to: 'after' }],
      retry: { maxAttempts: 1, initialIntervalMs: 1_000, backoffCoefficient: 2, maxIntervalMs: 60_000, nonRetryable: [] },
      timeouts: { queueMs: 3_600_000, leaseMs: 30_000, executionMs: 86_400_000 },
    },
  };
}

function suspendedOnTimer(executionId: string, snapshot: WorkflowSnapshot, clock: Clock): (() => ExecutionCommand)[] {
  const attemptId = randomUUID();
  const fence = { attemptId, workerId: 'bench-worker', fencingToken: 1 };
  const metadata = () => ({ now: clock.now(), actor: 'bench' });
  return [
    () => ({
      type: 'StartExecution',
      data: { executionId, workspaceId: 'bench', workflow: snapshot, input: {}, idempotency: null, attemptId },
      metadata: metadata(),
    }),
    () => ({ type: 'ClaimAttempt', data: { attemptId, workerId: fence.workerId }, metadata: metadata() }),
    () => ({
      type: 'RecordNodeResult',
      data: { ...fence, kind: 'node_waiting', nodeId: 'pause', wait: { kind: 'timer' } },
      metadata: metadata(),
    }),
    () => ({
      type: 'CompleteAttempt',
      data: { ...fence, outcome: 'suspended', timers: ['pause'], nextAttemptId: randomUUID(), jitter: 0 },
      metadata: metadata(),
    }),
  ];
}

/** Waits until the main thread has been mostly idle for half a second (the app caught up with the seeding). */
async function settled(): Promise<void> {
  for (let tries = 0; tries < 240; tries++) {
    const before = performance.eventLoopUtilization();
    await sleep(500);
    if (performance.eventLoopUtilization(before).utilization < 0.1) return;
  }
  log('the app never settled; measuring anyway');
}

async function main(): Promise<void> {
  // Persisted in a data directory, as `npm start` keeps its database (removed at the end).
  const dataDir = mkdtempSync(join(tmpdir(), 'flostra-bench-timers-'));
  const stack = await openBenchStack({ mode: 'embedded', dataDir: join(dataDir, 'pgdata') });
  const clock = new MovableClock();
  const dueAt = new Date(Date.now() + 3_600_000);
  dueAt.setMilliseconds(0);
  const snapshot = workflow(dueAt.toISOString());

  const seeding = new ExecutionStreams(stack.store, clock, randomIds);
  const seedStarted = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CONCURRENCY }, async () => {
      while (next < TIMERS) {
        next++;
        const executionId = randomUUID();
        await seeding.handleBatch(executionId, suspendedOnTimer(executionId, snapshot, clock));
      }
    }),
  );
  const seedMs = performance.now() - seedStarted;
  log(`seeded ${TIMERS} suspended executions in ${Math.round(seedMs)} ms`);

  const tokens: TokenEntry[] = [{ token: TOKEN, subject: 'bench', workspaces: { bench: 'admin' }, global: ['worker'] }];
  const count = async (): Promise<number> =>
    Number((await stack.sql.query<{ n: string | number }>('select count(*) as n from timers_due')).rows[0].n);
  // A first start catches up with the seeding: the timer role fills its table, the other roles
  // their state. Then a restart, as during any long wait: the timers fire from a process that has
  // none of these executions in memory.
  const first = await startBenchApp(stack, tokens, clock);
  const trackStarted = performance.now();
  while ((await count()) < TIMERS) await sleep(50);
  const trackMs = performance.now() - trackStarted;
  log(`the timer table holds all ${TIMERS} timers after ${Math.round(trackMs)} ms`);
  await settled();
  await first.app.close();
  // The in-process bus lives and dies with its process: the restarted app gets a new one.
  await stack.bus.close();
  const bus = new InProcessBus();
  const { app, logger, workerRoute } = await startBenchApp({ ...stack, bus }, tokens, clock);
  // The worker as `npm start` runs it: claims, results and dispatches in process.
  const worker = createWorker({ ...workerRoute(TOKEN), bus, logger, concurrency: loadConfig({}).workerConcurrency, egressAllow: [] });
  await worker.start();
  await settled();
  log('restarted and settled');

  // Follow the log from here: the store time of each firing and each end.
  const abort = new AbortController();
  const head = await stack.store.headPosition();
  const firedAt: number[] = [];
  let allFired: () => void = () => undefined;
  let cpuAtDue = process.cpuUsage();
  const firedCpu: { usage: NodeJS.CpuUsage | null } = { usage: null };
  const allFiredSeen = new Promise<void>((resolve) => (allFired = resolve));
  let dueRealMs = Number.NaN; // the due instant on the real clock, once the app's clock moved
  const endedAt: number[] = [];
  const ends: Record<string, number> = {};
  let allEnded: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => (allEnded = resolve));
  const following = (async () => {
    for await (const batch of stack.store.subscribeToAll({ after: head, streamPrefixes: ['execution-'], signal: abort.signal })) {
      for (const event of batch) {
        if (event.type === 'TimerFired' && firedAt.push(Date.parse(event.recordedAt)) === TIMERS) {
          firedCpu.usage = process.cpuUsage(cpuAtDue);
          const cpuMs = Math.round((firedCpu.usage.user + firedCpu.usage.system) / 1_000);
          log(
            `all fired, the last ${Math.max(...firedAt) - dueRealMs} ms after due (${cpuMs} ms of CPU); waiting for the executions to end`,
          );
          allFired();
        }
        if (EXECUTION_ENDS.has(event.type)) {
          endedAt.push(Date.parse(event.recordedAt));
          ends[event.type] = (ends[event.type] ?? 0) + 1;
        }
      }
      if (endedAt.length >= TIMERS) allEnded();
    }
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) log(`subscription failed: ${String(error)}`);
  });

  const checkpointsAtDue = await lagOfCheckpoints(stack, head);
  log(`checkpoints at the due instant: ${JSON.stringify(checkpointsAtDue)}`);
  // A while before they are all due: from then on the role finds them the way it would live.
  clock.offsetMs = dueAt.getTime() - LEAD_MS - Date.now();
  dueRealMs = dueAt.getTime() - clock.offsetMs;
  // The CPU time and the profile cover the firing span only, not the role's reading ahead.
  await sleep(Math.max(0, dueRealMs - Date.now()));
  let profiler: Session | undefined;
  if (PROFILE !== undefined) {
    profiler = new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
    stack.sqlTraffic.startByCaller();
  }
  const profiled = allFiredSeen.then(async () => {
    if (profiler === undefined || PROFILE === undefined) return undefined;
    const { profile } = await profiler.post('Profiler.stop');
    const calls = [...stack.sqlTraffic.stopByCaller().entries()].sort((a, b) => b[1].statements - a[1].statements).slice(0, 25);
    profiler.disconnect();
    writeFileSync(PROFILE, JSON.stringify(profile));
    return { cpu: summarizeCpuProfile(profile as CpuProfile, TIMERS), sqlByCaller: Object.fromEntries(calls) };
  });
  const loadAtDue = loadavg();
  cpuAtDue = process.cpuUsage();
  const timeout = setTimeout(() => {
    log('not every execution ended within 600 s');
    allEnded();
  }, 600_000);
  await ended;
  clearTimeout(timeout);
  await sleep(1_000); // a second firing of any timer would show up by now
  await worker.stop();
  await app.close();
  await bus.close();
  abort.abort();
  await following;

  const { rows } = await stack.sql.query<{ n: string | number; timers: string | number; late: string | number | null }>(
    `select count(*) as n, count(distinct data->>'timerId') as timers, max((data->>'lateByMs')::int) as late
     from event_store.events where type = 'TimerFired'`,
  );
  const fired = Number(rows[0].n);
  // Why an attempt timed out, if one did (lease, queue or execution deadline).
  const timedOut = await stack.sql.query<{ reason: string; n: string | number }>(
    `select data->>'reason' as reason, count(*) as n from event_store.events where type = 'AttemptTimedOut' group by 1`,
  );
  const firedWithinMs = Math.max(...firedAt) - dueRealMs;
  const wentOnWithinMs = Math.max(...endedAt) - dueRealMs;
  const result = {
    bench: 'timers',
    store: 'pglite (embedded, in process, persisted in a data directory), in-process bus, every role and a worker in this process',
    pgliteThread: loadConfig(process.env).pgliteThread,
    timers: TIMERS,
    fired,
    firedOnce: fired === TIMERS && Number(rows[0].timers) === TIMERS,
    allFiredWithinMs: Math.round(firedWithinMs),
    firingsPerSecond: Math.round(fired / (firedWithinMs / 1_000)),
    // The process's own CPU time over the same span: on a shared host, less noisy than the wall clock.
    firedCpuMs: firedCpu.usage === null ? null : Math.round((firedCpu.usage.user + firedCpu.usage.system) / 1_000),
    maxLateByMs: rows[0].late === null ? null : Number(rows[0].late),
    checkpointsAtDue,
    ends,
    attemptsTimedOut: Object.fromEntries(timedOut.rows.map((row) => [row.reason, Number(row.n)])),
    allWentOnWithinMs: Math.round(wentOnWithinMs),
    // Executions that went on while timers still fired: the continuations' share of the span.
    endedBeforeAllFired: endedAt.filter((at) => at <= Math.max(...firedAt)).length,
    rowsLeft: await count(),
    leadMs: LEAD_MS,
    aimMs: AIM_MS,
    metAim: fired === TIMERS && firedWithinMs <= AIM_MS,
    seedMs: Math.round(seedMs),
    tableFilledMs: Math.round(trackMs),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', memoryGb: Math.round(totalmem() / 2 ** 30), loadavg: loadAtDue },
    node: process.version,
    profile: await profiled,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  await stack.close();
  rmSync(dataDir, { recursive: true, force: true });
}

/** How far each checkpointed subscription was behind the log's head (events of the log in between). */
async function lagOfCheckpoints(stack: Awaited<ReturnType<typeof openBenchStack>>, head: string | null): Promise<Record<string, string>> {
  const { rows } = await stack.sql.query<{ name: string; position: string }>('select name, position from subscription_checkpoints');
  return Object.fromEntries(rows.map((row) => [row.name, row.position === head ? 'at head' : `${row.position} (head ${head})`]));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
