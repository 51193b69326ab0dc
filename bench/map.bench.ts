import 'reflect-metadata';
import { cpus } from 'node:os';
import { createLogger } from '../src/core/logger.js';
import { MAX_NODES } from '../src/workflows/domain/workflow-graph.limits.js';
import { createWorker } from '../src/worker/runtime/create-worker.js';
import { post } from './bench-support.js';
import { openStack, startBenchApp } from './bench-stack.js';

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
  const stack = await openStack(MODE, 'bench_map');
  const logger = createLogger({ level: 'silent' });
  const { app, url } = await startBenchApp(stack, TOKEN);
  const worker = createWorker({ bus: stack.bus, apiUrl: url, token: TOKEN, logger, concurrency: 16, egressAllow: [] });
  await worker.start();
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  for (const [name, graph] of [
    ['mapped', MAPPED],
    ['plain', PLAIN],
  ] as const) {
    const put = await fetch(`${url}/v1/workspaces/bench/workflows/${name}`, { method: 'PUT', headers, body: JSON.stringify(graph) });
    if (!put.ok) throw new Error(`publishing ${name} answered ${put.status}: ${await put.text()}`);
  }

  const ended = new Map<string, (type: string) => void>();
  const abort = new AbortController();
  const following = (async () => {
    const after = await stack.store.headPosition();
    for await (const batch of stack.store.subscribeToAll({ after, streamPrefixes: ['execution-'], signal: abort.signal })) {
      for (const event of batch) {
        if (event.type !== 'ExecutionSucceeded' && event.type !== 'ExecutionFailed') continue;
        const id = event.streamId.slice('execution-'.length);
        ended.get(id)?.(event.type);
        ended.delete(id);
      }
    }
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) log(`subscription failed: ${String(error)}`);
  });

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
  abort.abort();
  await worker.stop();
  await app.close();
  await following;
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
