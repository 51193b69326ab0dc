import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createInterface } from 'node:readline';
import { createWorker } from '../src/worker/runtime/create-worker.js';
import { followExecutionEnds, openBenchStack, publishBenchWorkflow, startBenchApp } from './bench-stack.js';

/**
 * Flostra as one system under test of `bench:peers` (bench/peers.bench.ts), in a process of its
 * own so that its CPU and memory are its own: every role and the worker in this process, as in
 * `bench:e2e`'s `full` and `embedded` modes. The benchmark starts executions over Flostra's HTTP
 * API; this process sees each end on the event store's own subscription (no polling of the API)
 * and reports it as one line `done <executionId>` on stdout.
 *
 * Environment: PEERS_FLOSTRA_MODE (`full` or `embedded`), PEERS_DATABASE_URL and
 * PEERS_KAFKA_BROKERS (full), PEERS_TOKEN, PEERS_WORKER_CONCURRENCY (attempts the worker runs at
 * once; 16 unless set). First stdout line: `ready <url>`.
 * Commands on stdin: `profile-start`, `profile-stop <file>` (a V8 CPU profile of this process,
 * the same profiler as `node --cpu-prof`, over exactly the span between the two), `stop`.
 */

const DIAMOND = {
  nodes: ['a', 'b', 'c', 'd'].map((id) => ({ id, type: 'noop' })),
  edges: [
    { from: 'a', to: 'b' },
    { from: 'a', to: 'c' },
    { from: 'b', to: 'd' },
    { from: 'c', to: 'd' },
  ],
};

const mode = process.env.PEERS_FLOSTRA_MODE ?? 'embedded';
const token = process.env.PEERS_TOKEN ?? 'bench-token';
const say = (line: string) => process.stdout.write(`${line}\n`);

async function main() {
  const stack = await openBenchStack(
    mode === 'full'
      ? {
          mode: 'external',
          databaseUrl: required('PEERS_DATABASE_URL'),
          brokers: required('PEERS_KAFKA_BROKERS').split(','),
          clientId: 'bench-peers',
        }
      : { mode: 'embedded' },
  );
  const { app, url, logger, workerRoute } = await startBenchApp(stack, [
    { token, subject: 'bench', workspaces: { bench: 'admin' }, global: ['worker'] },
  ]);
  const worker = createWorker({
    ...workerRoute(token),
    bus: stack.bus,
    logger,
    concurrency: Number(process.env.PEERS_WORKER_CONCURRENCY ?? 16),
    egressAllow: [],
  });
  await worker.start();
  await publishBenchWorkflow(url, token, 'diamond', DIAMOND);

  // Completion from the log itself, as bench:e2e sees it; ends go out in one write per batch.
  const follower = await followExecutionEnds(
    stack.store,
    (ends) => process.stdout.write(ends.map(({ executionId }) => `done ${executionId}\n`).join('')),
    (message) => process.stderr.write(`[flostra-host] ${message}\n`),
  );

  let profiler: Session | undefined;
  const stop = async () => {
    await worker.stop();
    await app.close();
    await follower.stop();
    await stack.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [command, argument] = line.trim().split(' ');
    void (async () => {
      if (command === 'profile-start') {
        profiler = new Session();
        profiler.connect();
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
        say('profiling');
      } else if (command === 'profile-stop' && profiler !== undefined && argument !== undefined) {
        const { profile } = await profiler.post('Profiler.stop');
        writeFileSync(argument, JSON.stringify(profile));
        profiler.disconnect();
        profiler = undefined;
        say(`profiled ${argument}`);
      } else if (command === 'stop') await stop();
    })().catch((error: unknown) => process.stderr.write(`[flostra-host] ${command} failed: ${String(error)}\n`));
  });
  say(`ready ${url}`);
}

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

main().catch((error: unknown) => {
  process.stderr.write(`[flostra-host] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
