import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import type { Clock } from '../src/core/clock.port.js';
import { randomIds } from '../src/core/ids.js';
import { createLogger } from '../src/core/logger.js';
import { PostgresEventStore } from '../src/event-store/postgres/postgres-event-store.js';
import { ExecutionStreams } from '../src/executions/application/execution-streams.js';
import type { ExecutionCommand } from '../src/executions/domain/execution.commands.js';
import type { WorkflowSnapshot } from '../src/executions/domain/execution.events.js';
import { PgliteSqlClient } from '../src/postgres/pglite-sql-client.js';
import { createTimerService } from '../src/timers/timers.module.js';

/**
 * The `timer` role on the embedded default store (PGlite, in this process): TIMERS executions
 * are suspended on a `delay` whose `until` is the same instant; once the role's table holds them
 * all, the clock is set one second before that instant and we measure from the instant until
 * every timer has fired (its `TimerFired`, node result and resume attempt appended, its row
 * gone). The executions are seeded through the decider (one append per execution: start,
 * claim, the worker's wait, the suspension), as the api and ingestor would write them.
 * Prints one JSON document on stdout; progress on stderr.
 */
const TIMERS = Number(process.env.BENCH_TIMERS ?? 10_000);
const SEED_CONCURRENCY = 16;
const AIM_MS = 5_000;
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

async function main(): Promise<void> {
  const sql = await PgliteSqlClient.open();
  const store = await PostgresEventStore.open(sql);
  const clock = new MovableClock();
  const executions = new ExecutionStreams(store, clock, randomIds);
  const logger = createLogger({ level: 'silent' });
  const dueAt = new Date(Date.now() + 3_600_000);
  dueAt.setMilliseconds(0);
  const snapshot = workflow(dueAt.toISOString());

  const seedStarted = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CONCURRENCY }, async () => {
      while (next < TIMERS) {
        next++;
        const executionId = randomUUID();
        await executions.handleBatch(executionId, suspendedOnTimer(executionId, snapshot, clock));
      }
    }),
  );
  const seedMs = performance.now() - seedStarted;
  log(`seeded ${TIMERS} suspended executions in ${Math.round(seedMs)} ms`);

  const service = await createTimerService({ store, executions, sql, clock, ids: randomIds, logger });
  service.start();
  const count = async (): Promise<number> =>
    Number((await sql.query<{ n: string | number }>('select count(*) as n from timers_due')).rows[0].n);
  const trackStarted = performance.now();
  while ((await count()) < TIMERS) await sleep(50);
  const trackMs = performance.now() - trackStarted;
  log(`the timer table holds all ${TIMERS} timers after ${Math.round(trackMs)} ms`);

  // One second before they are all due: from then on the role finds them the way it would live.
  clock.offsetMs = dueAt.getTime() - 1_000 - Date.now();
  const dueInRealMs = performance.now() + 1_000;
  let firstEmptyMs: number | null = null;
  while (firstEmptyMs === null) {
    await sleep(10);
    if ((await count()) === 0) firstEmptyMs = performance.now();
  }
  const firedWithinMs = firstEmptyMs - dueInRealMs;
  await service.stop();
  const { rows } = await sql.query<{ n: string | number; late: string | number | null }>(
    `select count(*) as n, max((data->>'lateByMs')::int) as late from event_store.events where type = 'TimerFired'`,
  );
  const fired = Number(rows[0].n);
  const result = {
    bench: 'timers',
    store: 'pglite (embedded, in process)',
    timers: TIMERS,
    fired,
    firedOnce: fired === TIMERS,
    allFiredWithinMs: Math.round(firedWithinMs),
    maxLateByMs: rows[0].late === null ? null : Number(rows[0].late),
    aimMs: AIM_MS,
    metAim: fired === TIMERS && firedWithinMs <= AIM_MS,
    seedMs: Math.round(seedMs),
    tableFilledMs: Math.round(trackMs),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', memoryGb: Math.round(totalmem() / 2 ** 30), loadavg: loadavg() },
    node: process.version,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  await store.close();
  await sql.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
