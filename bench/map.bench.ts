import 'reflect-metadata';
import { cpus } from 'node:os';
import { MAX_NODES } from '../src/workflows/domain/workflow-graph.limits.js';
import { createWorker } from '../src/worker/runtime/create-worker.js';
import { post } from './bench-support.js';
import { followExecutionEnds, openBenchStack, publishBenchWorkflow, startBenchApp } from './bench-stack.js';

/**
 * A `map` of ITEMS `noop` items at concurrency 50 against the same work as plain `noop` nodes:
 * items (or nodes) finished per second, from the start over HTTP to ExecutionSucceeded seen on
 * the event store's subscription. A workflow has at most MAX_NODES nodes, so the plain side runs
 * ITEMS / MAX_NODES executions of MAX_NODES independent nodes, one after the other. Rounds are
 * interleaved (map, plain, plain, map, …) so drift on a shared machine hits both sides alike.
 * Prints one JSON document on stdout; progress on stderr.
 */

const ITEMS = Number(process.env.BENCH_ITEMS ?? 1_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const MODE = process.env.BENCH_MODE ?? 'full';
const TOKEN = 'bench-token';

const log = (message: string) => process.stderr.write(`[bench:map] ${message}\n`);

const MAPPED = {
  nodes: [{ id: 'each', type: 'map', config: { items: `[1..${ITEMS}]`, concurrency: 50, node: { type: 'noop' } } }],
};
const PLAIN = { nodes: Array.from({ length: MAX_NODES }, (_, i) => ({ id: `n${i}`, type: 'noop' })) };

async function main() {
  if (ITEMS % MAX_NODES !== 0) throw new Error(`BENCH_ITEMS must be a multiple of ${MAX_NODES}`);
  log(`${MODE}: starting the stack`);
  const stack = await openBenchStack(
    MODE === 'embedded' ? { mode: 'embedded' } : { mode: 'full', database: 'bench_map', clientId: 'bench' },
  );
  const { app, url, logger } = await startBenchApp(stack, [
    { token: TOKEN, subject: 'bench', workspaces: { bench: 'admin' }, global: ['worker'] },
  ]);
  const worker = createWorker({ bus: stack.bus, apiUrl: url, token: TOKEN, logger, concurrency: 16, egressAllow: [] });
  await worker.start();
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  await publishBenchWorkflow(url, TOKEN, 'mapped', MAPPED);
  await publishBenchWorkflow(url, TOKEN, 'plain', PLAIN);

  const ended = new Map<string, (type: string) => void>();
  const follower = await followExecutionEnds(
    stack.store,
    (ends) => {
      for (const { executionId, type } of ends) {
        ended.get(executionId)?.(type);
        ended.delete(executionId);
      }
    },
    log,
  );

  async function runOnce(name: string): Promise<void> {
    const response = await post(`${url}/v1/workspaces/bench/workflows/${name}/executions`, headers, '{}');
    if (response.status !== 201) throw new Error(`start answered ${response.status}: ${response.body}`);
    const { executionId } = JSON.parse(response.body) as { executionId: string };
    const type = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`execution ${executionId} did not finish in 120 s`)), 120_000);
      ended.set(executionId, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
    if (type !== 'ExecutionSucceeded') throw new Error(`execution ${executionId} of ${name} ended ${type}`);
  }

  /** Items (or plain nodes) per second for ITEMS of them. */
  async function measure(side: 'map' | 'plain'): Promise<number> {
    const started = performance.now();
    if (side === 'map') await runOnce('mapped');
    else for (let i = 0; i < ITEMS / MAX_NODES; i++) await runOnce('plain');
    return Math.round((ITEMS / ((performance.now() - started) / 1000)) * 10) / 10;
  }

  log('warming up: one of each');
  await measure('map');
  await measure('plain');
  const rounds: { map: number; plain: number; ratio: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Interleaved, the first side alternating: neither always runs on a warmer machine.
    const order: ('map' | 'plain')[] = round % 2 === 0 ? ['map', 'plain'] : ['plain', 'map'];
    const measured: Record<string, number> = {};
    for (const side of order) measured[side] = await measure(side);
    const ratio = Math.round((measured['plain'] / measured['map']) * 100) / 100;
    rounds.push({ map: measured['map'], plain: measured['plain'], ratio });
    log(`round ${round + 1}: map ${measured['map']} items/s, plain ${measured['plain']} nodes/s, plain/map ${ratio}`);
  }
  await worker.stop();
  await app.close();
  await follower.stop();
  await stack.close();

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  process.stdout.write(
    JSON.stringify({
      benchmark: `map of ${ITEMS} noop items at concurrency 50 vs ${ITEMS} plain noop nodes (${ITEMS / MAX_NODES} executions of ${MAX_NODES}), start→ExecutionSucceeded`,
      mode: MODE,
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
      rounds,
      median: {
        mapItemsPerSecond: median(rounds.map((r) => r.map)),
        plainNodesPerSecond: median(rounds.map((r) => r.plain)),
        plainOverMap: median(rounds.map((r) => r.ratio)),
      },
    }) + '\n',
  );
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:map failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
