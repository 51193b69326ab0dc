import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runIsolationBench, SCENARIOS, type ScenarioName } from './isolation.js';

/**
 * `npm run bench:isolation`: how far one workspace's load delays another's executions, and how
 * long a removed token keeps working under load (see bench/isolation.ts). Prints one JSON
 * document on stdout; progress on stderr.
 *
 * BENCH_ISOLATION_SCENARIOS (comma list, default all), BENCH_ISOLATION_EXECUTIONS (100),
 * BENCH_ISOLATION_CONCURRENCY (4), BENCH_ISOLATION_WARMUP (20), BENCH_ISOLATION_REVOCATION_TRIALS
 * (5), BENCH_ISOLATION_MAIN (the server to measure: default this checkout's dist/src/main.js; another
 * checkout's, built, to compare before and after in one sitting).
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function integer(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer of at least ${min}; got ${JSON.stringify(raw)}`);
  return value;
}

function scenarios(): ScenarioName[] {
  const raw = process.env.BENCH_ISOLATION_SCENARIOS;
  if (raw === undefined || raw === '') return [...SCENARIOS];
  const names = raw.split(',').map((name) => name.trim());
  for (const name of names)
    if (!SCENARIOS.includes(name as ScenarioName)) throw new Error(`unknown scenario ${name}: one of ${SCENARIOS.join(', ')}`);
  return names as ScenarioName[];
}

const options = {
  main: process.env.BENCH_ISOLATION_MAIN ? resolve(process.env.BENCH_ISOLATION_MAIN) : join(root, 'dist', 'src', 'main.js'),
  scenarios: scenarios(),
  executions: integer('BENCH_ISOLATION_EXECUTIONS', 100, 1),
  concurrency: integer('BENCH_ISOLATION_CONCURRENCY', 4, 1),
  warmup: integer('BENCH_ISOLATION_WARMUP', 20, 0),
  revocationTrials: integer('BENCH_ISOLATION_REVOCATION_TRIALS', 5, 0),
  revocationTimeoutMs: 15_000,
  log: (line: string) => void process.stderr.write(`[bench:isolation] ${line}\n`),
};

const startedAt = new Date().toISOString();
const report = await runIsolationBench(options);
process.stdout.write(
  `${JSON.stringify(
    {
      benchmark: 'isolation',
      startedAt,
      machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg(), node: process.version },
      settings: { ...options, log: undefined },
      ...report,
    },
    null,
    2,
  )}\n`,
);
