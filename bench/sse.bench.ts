import { fork, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { LiveStreams } from '../src/live/live-streams.service.js';
import { startPostgresServer, TEST_DATABASE_URL_ENV, type PostgresServer } from '../test/support/postgres-server.js';
import { startTestApp, TOKENS, type StoreKind } from '../test/support/test-app.js';

/**
 * Live progress at scale: CLIENTS concurrent SSE streams of one workspace on one API process
 * (the whole app: projector, timeline, live feed), while executions start at RATE per second.
 * Latency is from the command's response (the append is durable) to a client receiving the
 * event with that position. The app runs in a child process so that its RSS is its own; the
 * clients and the driver share this one. Prints one JSON document on stdout; progress on stderr.
 */
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 1_000);
const RATE = Number(process.env.BENCH_RATE ?? 10);
const RUN_MS = Number(process.env.BENCH_RUN_MS ?? 10_000);
const STORE = (process.env.BENCH_STORE ?? 'pglite') as StoreKind;
const DEADLINE_MS = 120_000;

type Reply = { rss: number; heapUsed: number; stats: unknown };

async function serve(): Promise<void> {
  const app = await startTestApp(STORE);
  const streams = app.app.get(LiveStreams);
  process.on('message', (message: string) => {
    if (message !== 'measure') return;
    (globalThis as { gc?: () => void }).gc?.();
    const { rss, heapUsed } = process.memoryUsage();
    process.send!({ rss, heapUsed, stats: streams.stats() } satisfies Reply);
  });
  process.send!({ url: app.url });
}

function ask(child: ChildProcess): Promise<Reply> {
  return new Promise((resolve) => {
    child.once('message', (reply) => resolve(reply as Reply));
    child.send('measure');
  });
}

/**
 * A minimal SSE reader on a raw socket: notes when each `id:` line arrives, and nothing else.
 * No HTTP parser on this side, so the clients cost this process little of the two cores the
 * server needs too. (Every chunk of the chunked body holds whole frames: one write each.)
 */
function openClient(url: string, onId: (id: string, at: number) => void): Promise<() => void> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), noDelay: true }, () => {
      socket.write(
        `GET ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${TOKENS.viewerA}\r\nAccept: text/event-stream\r\n\r\n`,
      );
    });
    let pending = '';
    let opened = false;
    socket.on('data', (chunk: Buffer) => {
      const at = performance.now();
      const lines = (pending + chunk.toString('latin1')).split('\n');
      pending = lines.pop()!;
      if (!opened) {
        if (!lines[0].startsWith('HTTP/1.1 200')) return reject(new Error(`SSE answered ${lines[0]}`));
        opened = true;
        resolve(() => socket.destroy());
      }
      for (const line of lines) if (line.startsWith('id: ')) onId(line.slice(4), at);
    });
    socket.on('error', reject);
  });
}

async function send(
  method: 'PUT' | 'POST',
  base: string,
  path: string,
  token: string,
  body: unknown,
): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 10) / 10;
}

/** Latency of every (event, client) pair, plus where it goes: the pipeline or the fan-out. */
function summarize(sent: Map<string, number>, arrivals: Map<string, number[]>) {
  const latencies: number[] = [];
  // Per event: when the first client had it (the pipeline), and how long until the last did (the fan-out).
  const firsts: number[] = [];
  const spreads: number[] = [];
  let missing = 0;
  let beforeResponse = 0;
  for (const [position, answeredAt] of sent) {
    const times = arrivals.get(position) ?? [];
    missing += CLIENTS - times.length;
    if (times.length === 0) continue;
    firsts.push(Math.max(0, Math.min(...times) - answeredAt));
    spreads.push(Math.max(...times) - Math.min(...times));
    // This process may read a client's socket before the command's response: that is 0 ms.
    for (const t of times) {
      if (t < answeredAt) beforeResponse++;
      latencies.push(Math.max(0, t - answeredAt));
    }
  }
  for (const list of [latencies, firsts, spreads]) list.sort((a, b) => a - b);
  return {
    deliveries: latencies.length,
    missingDeliveries: missing,
    deliveredBeforeResponse: beforeResponse,
    latencyMs: {
      p50: percentile(latencies, 0.5),
      p90: percentile(latencies, 0.9),
      p99: percentile(latencies, 0.99),
      max: percentile(latencies, 1),
    },
    firstClientLatencyMs: { p50: percentile(firsts, 0.5), p99: percentile(firsts, 0.99) },
    firstToLastClientMs: { p50: percentile(spreads, 0.5), p99: percentile(spreads, 0.99) },
  };
}

async function main(): Promise<void> {
  const log = (msg: string) => process.stderr.write(`[bench:sse] ${msg}\n`);
  let postgres: PostgresServer | null = null;
  if (STORE === 'postgres') postgres = await startPostgresServer();
  const child = fork(fileURLToPath(import.meta.url), ['--server'], {
    execArgv: ['--expose-gc'],
    env: { ...process.env, ...(postgres ? { [TEST_DATABASE_URL_ENV]: postgres.url } : {}) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const killer = setTimeout(() => {
    log('deadline reached; stopping');
    child.kill('SIGKILL');
    process.exit(2);
  }, DEADLINE_MS);
  try {
    const { url } = await new Promise<{ url: string }>((resolve) => child.once('message', (m) => resolve(m as { url: string })));
    const published = await send('PUT', url, '/v1/workspaces/ws-a/workflows/bench', TOKENS.adminA, {
      nodes: [{ id: 'a', type: 'noop' }],
      edges: [],
    });
    if (published.status >= 300) throw new Error(`publish failed: ${JSON.stringify(published.body)}`);
    const arrivals = new Map<string, number[]>();
    const openAll = async (clients = CLIENTS) => {
      const closers: (() => void)[] = [];
      for (let opened = 0; opened < clients; opened += 100) {
        const batch = Array.from({ length: Math.min(100, clients - opened) }, () =>
          openClient(`${url}/v1/workspaces/ws-a/events`, (id, at) => {
            const times = arrivals.get(id);
            if (times === undefined) arrivals.set(id, [at]);
            else times.push(at);
          }),
        );
        closers.push(...(await Promise.all(batch)));
      }
      return closers;
    };
    const settle = () => new Promise((resolve) => setTimeout(resolve, 1_000));
    // A few streams first, so that code being loaded does not count as memory per client.
    log(`warming up on ${STORE}`);
    (await openAll(10)).forEach((close) => close());
    await send('POST', url, '/v1/workspaces/ws-a/workflows/bench/executions', TOKENS.operatorA, { input: {} });
    await settle();
    // The baseline is the lowest of a few samples: an embedded PGlite gives memory back slowly.
    let before = await ask(child);
    for (let i = 0; i < 4; i++) {
      await settle();
      const sample = await ask(child);
      if (sample.rss < before.rss) before = sample;
    }
    log(`baseline RSS ${Math.round(before.rss / 1048576)} MB`);

    log(`opening ${CLIENTS} SSE clients`);
    const connectStarted = performance.now();
    const closers = await openAll();
    const connectMs = performance.now() - connectStarted;
    await settle();
    const connected = await ask(child);

    log(`driving ${RATE} starts/s for ${RUN_MS} ms`);
    const sent = new Map<string, number>();
    const commands: Promise<void>[] = [];
    const runStarted = performance.now();
    for (let i = 0; performance.now() - runStarted < RUN_MS; i++) {
      const due = runStarted + (i * 1000) / RATE;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
      commands.push(
        send('POST', url, '/v1/workspaces/ws-a/workflows/bench/executions', TOKENS.operatorA, { input: { i } }).then((res) => {
          if (res.status !== 201) throw new Error(`start failed: ${JSON.stringify(res.body)}`);
          sent.set(res.body.position as string, performance.now());
        }),
      );
    }
    await Promise.all(commands);
    const drainUntil = performance.now() + 15_000;
    while ([...sent.keys()].some((p) => (arrivals.get(p)?.length ?? 0) < CLIENTS) && performance.now() < drainUntil) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const after = await ask(child);
    closers.forEach((close) => close());

    const delivery = summarize(sent, arrivals);
    const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
    const result = {
      benchmark: 'sse-fan-out',
      store:
        STORE === 'pglite'
          ? 'embedded PGlite (in memory), app in one child process'
          : 'real PostgreSQL (Debian packages), app in one child process',
      clients: CLIENTS,
      stream: 'GET /v1/workspaces/ws-a/events (every event to every client)',
      startsPerSec: RATE,
      runMs: RUN_MS,
      trackedEvents: sent.size,
      connectAllMs: Math.round(connectMs),
      ...delivery,
      memory: {
        rssBeforeMB: mb(before.rss),
        rssConnectedMB: mb(connected.rss),
        rssAfterRunMB: mb(after.rss),
        rssPerClientKB: Math.round(((connected.rss - before.rss) / CLIENTS / 1024) * 10) / 10,
        heapPerClientKB: Math.round(((connected.heapUsed - before.heapUsed) / CLIENTS / 1024) * 10) / 10,
      },
      serverStats: after.stats,
      node: process.version,
      cpus: (await import('node:os')).cpus().length,
    };
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } finally {
    clearTimeout(killer);
    child.kill('SIGTERM');
    await postgres?.stop();
  }
}

if (process.argv.includes('--server')) {
  serve().catch((error: unknown) => {
    process.stderr.write(`[bench:sse server] ${String(error)}\n`);
    process.exit(1);
  });
} else {
  main().catch((error: unknown) => {
    process.stderr.write(`[bench:sse] ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
