import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  call,
  expectCall,
  newToken,
  openLiveStream,
  startIsolationServer,
  type IsolationServer,
  type LiveStream,
  type TokenGrant,
} from './isolation-server.js';

/**
 * How far one workspace can delay another's executions, and how long a removed token keeps
 * working under load (docs/benchmarks.md, "Isolation between workspaces").
 *
 * Each scenario gets a fresh server (`node dist/src/main.js`, every role on PGlite, a tokens file):
 * ws-b runs `executions` short executions (one `code` node, `return 42`) at `concurrency` at a
 * time with nothing else running (quiet), then again while ws-a (quota at 1, as an operator would
 * set it) does one of:
 * - `start-flood`: 16 clients start executions back to back;
 * - `fan-out`: one start of a workflow whose three `subworkflow` nodes each run the next workflow of
 *   a chain ten deep (3^9 leaves without a bound);
 * - `code-loop`: three executions of a map of 8 `code` items that loop until their time limit;
 * - `signal-flood`: 900 KiB signals kept by one waiting execution, while 8 clients read its view.
 * A ws-b execution's time runs from just before its start request to its end event on ws-b's live
 * stream (at most 120 s: a longer wait counts as 120 s). `ratioP99` is the loaded p99 over the
 * quiet p99 of the same server.
 *
 * Revocation: ws-b's admin and a second ws-b token load the api steadily, the second holds a live
 * stream, and a log file beside the tokens file is appended every 2 ms; the second token is
 * removed from the file. `revokedAfterMs` is the time from the write to its first refused request,
 * `streamClosedAfterMs` to the end of its stream, `acceptedAfterRemoval` how many of its requests
 * sent after the write were still answered 200.
 */

export type ScenarioName = 'start-flood' | 'fan-out' | 'code-loop' | 'signal-flood';
export const SCENARIOS: readonly ScenarioName[] = ['start-flood', 'fan-out', 'code-loop', 'signal-flood'];

export interface IsolationOptions {
  /** The built server to measure (`dist/src/main.js` of a checkout). */
  main: string;
  scenarios: readonly ScenarioName[];
  executions: number;
  concurrency: number;
  warmup: number;
  revocationTrials: number;
  /** How long a trial waits for the removed token to be refused before it gives up. */
  revocationTimeoutMs: number;
  log: (line: string) => void;
}

export interface Latencies {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface ScenarioResult {
  scenario: ScenarioName;
  quiet: Latencies;
  loaded: Latencies;
  ratioP99: number;
  /** What ws-a's load did meanwhile, by answer status and what it observed. */
  load: Record<string, number>;
}

export interface RevocationTrial {
  revokedAfterMs: number | null;
  streamClosedAfterMs: number | null;
  acceptedAfterRemoval: number;
}

export interface IsolationReport {
  scenarios: ScenarioResult[];
  revocation: { trials: RevocationTrial[]; medianRevokedMs: number | null; maxRevokedMs: number | null };
}

const A = 'ws-a';
const B = 'ws-b';
const CHAIN = 10;
/** How long a ws-b execution is waited for: a longer one is reported at this figure. */
const END_CAP_MS = 120_000;

interface Tokens {
  a: string;
  b: string;
  leaver: string;
  worker: string;
}

function grants(tokens: Tokens, withLeaver = true): TokenGrant[] {
  return [
    { token: tokens.a, subject: 'tenant-a', workspaces: { [A]: 'admin' } },
    { token: tokens.b, subject: 'tenant-b', workspaces: { [B]: 'admin' } },
    ...(withLeaver ? [{ token: tokens.leaver, subject: 'leaver', workspaces: { [B]: 'viewer' } }] : []),
    { token: tokens.worker, subject: 'worker', global: ['worker'] },
  ];
}

export async function runIsolationBench(options: IsolationOptions): Promise<IsolationReport> {
  const scenarios: ScenarioResult[] = [];
  for (const scenario of options.scenarios) scenarios.push(await runScenario(scenario, options));
  const trials = options.revocationTrials > 0 ? await runRevocation(options) : [];
  const revoked = trials.map((trial) => trial.revokedAfterMs);
  const known = revoked.filter((ms): ms is number => ms !== null).sort((x, y) => x - y);
  return {
    scenarios,
    revocation: {
      trials,
      medianRevokedMs: known.length === revoked.length && known.length > 0 ? known[Math.floor(known.length / 2)] : null,
      maxRevokedMs: known.length === revoked.length && known.length > 0 ? known[known.length - 1] : null,
    },
  };
}

async function withServer<T>(options: IsolationOptions, work: (server: IsolationServer, tokens: Tokens) => Promise<T>): Promise<T> {
  const tokens: Tokens = { a: newToken(), b: newToken(), leaver: newToken(), worker: newToken() };
  const server = await startIsolationServer({ main: options.main, grants: grants(tokens), workerToken: tokens.worker, log: options.log });
  try {
    return await work(server, tokens);
  } finally {
    await server.stop();
  }
}

const put = (server: IsolationServer, token: string, path: string, body: unknown) =>
  expectCall([200, 201], 'PUT', `${server.url}${path}`, token, body);

async function publishAll(server: IsolationServer, tokens: Tokens): Promise<void> {
  await put(server, tokens.b, `/v1/workspaces/${B}/workflows/short`, {
    nodes: [{ id: 'answer', type: 'code', config: { language: 'javascript', source: 'return 42' } }],
    edges: [],
  });
  await put(server, tokens.a, `/v1/workspaces/${A}/settings`, { maxConcurrentExecutions: 1 });
  await put(server, tokens.a, `/v1/workspaces/${A}/workflows/noop`, { nodes: [{ id: 'n', type: 'noop' }], edges: [] });
  // The chain is published from its leaf up: a subworkflow node may only name a published workflow.
  await put(server, tokens.a, `/v1/workspaces/${A}/workflows/fan-${CHAIN - 1}`, {
    nodes: [{ id: 'wait', type: 'delay', config: { ms: 60_000 } }],
    edges: [],
  });
  for (let level = CHAIN - 2; level >= 0; level--) {
    await put(server, tokens.a, `/v1/workspaces/${A}/workflows/fan-${level}`, {
      nodes: [0, 1, 2].map((i) => ({ id: `child-${i}`, type: 'subworkflow', config: { workflow: `fan-${level + 1}` } })),
      edges: [],
    });
  }
  await put(server, tokens.a, `/v1/workspaces/${A}/workflows/loop`, {
    nodes: [
      {
        id: 'spin',
        type: 'map',
        config: {
          items: '[1,2,3,4,5,6,7,8]',
          concurrency: 8,
          node: { type: 'code', config: { language: 'javascript', source: 'while (true) {}', timeoutMs: 10_000 } },
        },
      },
    ],
    edges: [],
  });
  await put(server, tokens.a, `/v1/workspaces/${A}/workflows/waiter`, {
    nodes: [{ id: 'hold', type: 'wait_signal', config: { name: 'never' } }],
    edges: [],
  });
}

/** Follows a workspace's live stream: who ended when, and how many started. */
class EndWatcher {
  private readonly ended = new Map<string, number>();
  private readonly waiters = new Map<string, (at: number) => void>();
  started = 0;
  stream!: LiveStream;

  static async open(server: IsolationServer, workspaceId: string, token: string): Promise<EndWatcher> {
    const watcher = new EndWatcher();
    watcher.stream = await openLiveStream(`${server.url}/v1/workspaces/${workspaceId}/events`, token, (type, data) =>
      watcher.seen(type, data),
    );
    return watcher;
  }

  private seen(type: string, data: unknown): void {
    if (type === 'ExecutionStarted') this.started++;
    if (!/^Execution(Succeeded|Failed|TimedOut|Cancelled)$/.test(type)) return;
    const id = (data as { executionId: string }).executionId;
    const at = performance.now();
    this.ended.set(id, at);
    this.waiters.get(id)?.(at);
  }

  end(executionId: string): Promise<number> {
    const at = this.ended.get(executionId);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve) => this.waiters.set(executionId, resolve));
  }
}

async function runB(server: IsolationServer, tokens: Tokens, watcher: EndWatcher, count: number, concurrency: number): Promise<Latencies> {
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        const began = performance.now();
        const started = await expectCall([201], 'POST', `${server.url}/v1/workspaces/${B}/workflows/short/executions`, tokens.b, {});
        // An execution starved for longer than the cap counts as the cap, so that a run always ends.
        const cap = new Promise<number>((resolve) => setTimeout(() => resolve(began + END_CAP_MS), END_CAP_MS).unref());
        const ended = await Promise.race([watcher.end((JSON.parse(started.body) as { executionId: string }).executionId), cap]);
        latencies.push(ended - began);
      }
    }),
  );
  return summarize(latencies);
}

function summarize(values: number[]): Latencies {
  const sorted = [...values].sort((x, y) => x - y);
  const pct = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0);
  return { count: sorted.length, p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: Math.round(sorted[sorted.length - 1] ?? 0) };
}

interface Load {
  /** Resolves once the load is under way (observed, not timed). */
  engaged: Promise<void>;
  stop(): Promise<Record<string, number>>;
}

/** `clients` loops of `once` until stopped, counting answers by status. */
function loop(clients: number, once: () => Promise<number>, engagedAfter: number): Load {
  const counts: Record<string, number> = {};
  let running = true;
  let total = 0;
  let engage!: () => void;
  const engaged = new Promise<void>((resolve) => (engage = resolve));
  const done = Promise.all(
    Array.from({ length: clients }, async () => {
      while (running) {
        const status = await once().catch(() => 0);
        counts[String(status)] = (counts[String(status)] ?? 0) + 1;
        if (++total >= engagedAfter) engage();
      }
    }),
  );
  return {
    engaged,
    stop: async () => {
      running = false;
      await done;
      return counts;
    },
  };
}

async function startLoad(scenario: ScenarioName, server: IsolationServer, tokens: Tokens, watcherA: EndWatcher): Promise<Load> {
  const start = (workflow: string) =>
    call('POST', `${server.url}/v1/workspaces/${A}/workflows/${workflow}/executions`, tokens.a, {}).then((answer) => answer);
  switch (scenario) {
    case 'start-flood':
      return loop(16, async () => (await start('noop')).status, 200);
    case 'fan-out': {
      const root = await start('fan-0');
      const rootId = (JSON.parse(root.body) as { executionId: string }).executionId;
      const since = performance.now();
      // Engaged once the tree has grown, or after 10 s should a bound stop it sooner.
      return observed(
        () => watcherA.started >= 100 || performance.now() - since > 10_000,
        async () => {
          const cancel = await call('POST', `${server.url}/v1/executions/${rootId}/cancel`, tokens.a, {});
          return { rootCancel: cancel.status, executionsStarted: watcherA.started };
        },
      );
    }
    case 'code-loop': {
      for (let i = 0; i < 3; i++) await start('loop');
      return observed(
        () => watcherA.started >= 1,
        async () => ({ executionsStarted: watcherA.started }),
      );
    }
    case 'signal-flood': {
      const waiter = await start('waiter');
      const id = (JSON.parse(waiter.body) as { executionId: string }).executionId;
      const payload = { payload: { blob: 'x'.repeat(900 * 1024) } };
      const signals = loop(
        2,
        async () => (await call('POST', `${server.url}/v1/executions/${id}/signals/other`, tokens.a, payload)).status,
        40,
      );
      const views = loop(8, async () => (await call('GET', `${server.url}/v1/executions/${id}`, tokens.a)).status, 8);
      return {
        engaged: Promise.all([signals.engaged, views.engaged]).then(() => undefined),
        stop: async () => {
          const [sent, read] = await Promise.all([signals.stop(), views.stop()]);
          return { ...prefixed('signal', sent), ...prefixed('view', read) };
        },
      };
    }
  }
}

function prefixed(prefix: string, counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).map(([status, count]) => [`${prefix}${status}`, count]));
}

/** A load already under way on the server; engaged once `ready` holds (checked every 50 ms). */
function observed(ready: () => boolean, stop: () => Promise<Record<string, number>>): Load {
  const engaged = new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (!ready()) return;
      clearInterval(timer);
      resolve();
    }, 50);
  });
  return { engaged, stop };
}

async function runScenario(scenario: ScenarioName, options: IsolationOptions): Promise<ScenarioResult> {
  return withServer(options, async (server, tokens) => {
    await publishAll(server, tokens);
    const watcherB = await EndWatcher.open(server, B, tokens.b);
    const watcherA = await EndWatcher.open(server, A, tokens.a);
    await runB(server, tokens, watcherB, options.warmup, options.concurrency);
    const quiet = await runB(server, tokens, watcherB, options.executions, options.concurrency);
    options.log(`${scenario}: quiet p99 ${quiet.p99} ms`);
    const load = await startLoad(scenario, server, tokens, watcherA);
    await load.engaged;
    const loaded = await runB(server, tokens, watcherB, options.executions, options.concurrency);
    const counts = await load.stop();
    options.log(`${scenario}: loaded p99 ${loaded.p99} ms`);
    watcherA.stream.close();
    watcherB.stream.close();
    return { scenario, quiet, loaded, ratioP99: Math.round((loaded.p99 / Math.max(1, quiet.p99)) * 100) / 100, load: counts };
  });
}

async function runRevocation(options: IsolationOptions): Promise<RevocationTrial[]> {
  return withServer(options, async (server, tokens) => {
    const trials: RevocationTrial[] = [];
    const list = `${server.url}/v1/workspaces/${B}/executions?limit=1`;
    for (let trial = 0; trial < options.revocationTrials; trial++) {
      const busy = setInterval(() => appendFileSync(join(server.tokensDir, 'access.log'), `${new Date().toISOString()} GET /\n`), 2);
      const steady = loop(4, async () => (await call('GET', list, tokens.b)).status, 1);
      const stream = await openLiveStream(`${server.url}/v1/workspaces/${B}/events`, tokens.leaver, () => undefined);
      let removedAt = Number.POSITIVE_INFINITY;
      let refusedAt: number | null = null;
      let accepted = 0;
      const leaver = loop(
        1,
        async () => {
          const sentAt = performance.now();
          const { status } = await call('GET', list, tokens.leaver);
          if (sentAt > removedAt && status === 200) accepted++;
          if (status !== 200 && refusedAt === null) refusedAt = performance.now();
          return status;
        },
        50,
      );
      await Promise.all([steady.engaged, leaver.engaged]);
      removedAt = performance.now();
      server.writeTokens(grants(tokens, false));
      const deadline = removedAt + options.revocationTimeoutMs;
      const closed = await Promise.race([stream.closed, until(deadline).then(() => null)]);
      await until(deadline, () => refusedAt !== null);
      const result: RevocationTrial = {
        revokedAfterMs: refusedAt === null ? null : Math.round(refusedAt - removedAt),
        streamClosedAfterMs: closed === null ? null : Math.round(closed.closedAt - removedAt),
        acceptedAfterRemoval: accepted,
      };
      trials.push(result);
      options.log(`revocation ${trial + 1}: ${JSON.stringify(result)}`);
      stream.close();
      await Promise.all([steady.stop(), leaver.stop()]);
      clearInterval(busy);
      // Put the token back once the directory is quiet, and wait until it works again.
      server.writeTokens(grants(tokens));
      await until(
        performance.now() + 30_000,
        () => false,
        async () => (await call('GET', list, tokens.leaver)).status === 200,
      );
    }
    return trials;
  });
}

/** Waits until `done` (checked every 20 ms, or `probe` when given) holds or `deadline` passes. */
async function until(deadline: number, done: () => boolean = () => false, probe?: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (done()) return;
    if (probe !== undefined && (await probe())) return;
    if (performance.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
