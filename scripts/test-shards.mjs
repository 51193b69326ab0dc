// `npm test`'s jest step: the suites split into shards (test/shard-sequencer.mjs balances them by
// tier), each shard a jest process of its own running its suites one at a time, the shards side
// by side. Each process runs the global setups of its own tiers, so each shard has its own
// PostgreSQL and Kafka broker (free ports, temporary directories) and shards never share a
// database, a topic or a consumer group. Most of an e2e suite's time is spent waiting on the
// processes it starts, which in one in-band run leaves a core idle.
//
// Shards: FLOSTRA_TEST_SHARDS, else 1 when FLOSTRA_TEST_KAFKA_BROKERS names a broker to share
// (the suites' topics and consumer groups have fixed names, so two shards on one broker would
// take each other's messages), else 2 on a machine with four or more cores, else 1. On two cores
// two shards did not finish sooner: the PGlite suites and the processes the e2e suites start are
// CPU-bound, and the two shards' Postgres, Kafka and suites then fought for both cores until
// suites ran into their timeouts.
//
// Each shard runs its suites one at a time in one jest worker process rather than in band, and
// jest replaces that worker once its heap has grown past WORKER_MEMORY_LIMIT after a suite: every
// suite loads the app's modules into a module registry of its own, and a process that lives for
// the whole run keeps growing. In one in-band run on a two-core machine the same e2e suites took
// 2-5 times as long as with a replaced worker (worker-run 76 s against 32, sse-torture 40 against
// 14), and the run 47 minutes. Arguments are
// passed to every jest process (for example `--ignoreProjects chaos`). Each output line is
// prefixed with its shard; the exit code is the first non-zero one of the shards.
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const requested = process.env.FLOSTRA_TEST_SHARDS;
const sharedBroker = (process.env.FLOSTRA_TEST_KAFKA_BROKERS ?? '') !== '';
const shards = requested === undefined || requested === '' ? (sharedBroker || availableParallelism() < 4 ? 1 : 2) : Number(requested);
if (!Number.isInteger(shards) || shards < 1) {
  process.stderr.write(`FLOSTRA_TEST_SHARDS must be a whole number of at least 1, got "${requested}"\n`);
  process.exit(2);
}
const args = process.argv.slice(2);
const WORKER_MEMORY_LIMIT = '1GB';
const started = Date.now();

function run(index) {
  const shardArgs = shards > 1 ? [`--shard=${index}/${shards}`] : [];
  const child = spawn(
    process.execPath,
    [
      '--experimental-vm-modules',
      '--no-warnings',
      jest,
      '--maxWorkers=1',
      `--workerIdleMemoryLimit=${WORKER_MEMORY_LIMIT}`,
      ...shardArgs,
      ...args,
    ],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: process.env,
    },
  );
  const label = shards > 1 ? `[${index}/${shards}] ` : '';
  for (const [stream, sink] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => sink.write(`${label}${line}\n`));
  }
  return { child, done: new Promise((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)))) };
}

const runs = Array.from({ length: shards }, (_, i) => run(i + 1));
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const { child } of runs) child.kill(signal);
  });
}
const codes = await Promise.all(runs.map((r) => r.done));
const seconds = Math.round((Date.now() - started) / 1000);
const failed = codes.map((code, i) => (code === 0 ? undefined : `${i + 1}/${shards} exited ${code}`)).filter(Boolean);
process.stdout.write(
  failed.length === 0
    ? `\njest: ${shards} shard(s) passed in ${seconds} s\n`
    : `\njest: FAILED (${failed.join(', ')}) after ${seconds} s\n`,
);
process.exit(codes.find((code) => code !== 0) ?? 0);
