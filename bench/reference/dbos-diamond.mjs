// The reference point of bench:e2e, measured on this machine in the same period as Flostra:
// DBOS Transact for TypeScript running the same diamond (four no-op steps: a, then b and c in
// parallel, then d), each workflow started in-process and awaited, closed loop, with bench:e2e's
// warm-up and cells, on a real PostgreSQL started the way the test suites start it.
//
// DBOS is not a dependency of Flostra. Install it anywhere and point DBOS_MODULES at it, after
// `npm run build` in this repository:
//   mkdir -p /tmp/dbos && (cd /tmp/dbos && npm init -y && npm install @dbos-inc/dbos-sdk@5.3.0)
//   DBOS_MODULES=/tmp/dbos/node_modules node --min-semi-space-size=64 --max-semi-space-size=64 bench/reference/dbos-diamond.mjs
// Prints one JSON document on stdout (BENCH_SECONDS, BENCH_CONCURRENCY, BENCH_STACK_WARMUP_SECONDS
// as for bench:e2e); progress on stderr.
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

if (!process.env.DBOS_MODULES) {
  process.stderr.write('Set DBOS_MODULES to a node_modules directory holding @dbos-inc/dbos-sdk (see the header of this file).\n');
  process.exit(2);
}
const dbosEntry = createRequire(join(process.env.DBOS_MODULES, 'noop.js')).resolve('@dbos-inc/dbos-sdk');
const { DBOS } = await import(pathToFileURL(dbosEntry).href);
const dist = new URL('../../dist/', import.meta.url);
const { startPostgresServer, createTestDatabase } = await import(new URL('test/support/postgres-server.js', dist).href);
const { closedLoop, STACK_WARMUP_SECONDS } = await import(new URL('bench/bench-support.js', dist).href);

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map(Number);
const log = (message) => process.stderr.write(`[dbos-diamond] ${message}\n`);

const postgres = await startPostgresServer();
const url = await createTestDatabase('dbos_diamond', postgres.url);
const noop = async () => null;
const diamond = DBOS.registerWorkflow(
  async () => {
    await DBOS.runStep(noop, { name: 'a' });
    await Promise.all([DBOS.runStep(noop, { name: 'b' }), DBOS.runStep(noop, { name: 'c' })]);
    await DBOS.runStep(noop, { name: 'd' });
    return 'done';
  },
  { name: 'diamond' },
);
DBOS.setConfig({ name: 'diamond-bench', applicationVersion: '0.1.0', systemDatabaseUrl: url, logLevel: 'error' });
await DBOS.launch();

const once = async () => {
  const started = performance.now();
  await diamond();
  return performance.now() - started;
};
log(`warming up at 16 concurrent for ${STACK_WARMUP_SECONDS}s`);
await closedLoop(16, STACK_WARMUP_SECONDS, once);
const results = [];
for (const concurrency of CONCURRENCY) {
  log(`concurrency ${concurrency}`);
  await closedLoop(concurrency, 2, once);
  const { processCpu, machineCpu, ...result } = await closedLoop(concurrency, SECONDS, once);
  results.push({ ...result, cpuSecondsPerExecution: { nodeProcess: processCpu, wholeMachine: machineCpu } });
}
await DBOS.shutdown();
await postgres.stop();
process.stdout.write(
  JSON.stringify({
    benchmark: 'DBOS Transact (TypeScript) running the diamond in-process, closed loop, start→workflow result',
    secondsPerCell: SECONDS,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
    results,
  }) + '\n',
);
process.exit(0);
