import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startKafkaBroker } from '../test/support/kafka-broker.js';
import { createTestDatabase, startPostgresServer } from '../test/support/postgres-server.js';
import { STACK_WARMUP_SECONDS, closedLoop, post, type ClosedLoopResult } from './bench-support.js';
import { summarizeCpuProfile, type CpuProfile } from './peers-profile.js';
import { STATEMENT_PROFILE_SETTINGS, round3, servicesProfiler, type ServicesProfiler } from './peers-services-profile.js';

/**
 * bench:peers: Flostra side by side with Restate and DBOS Transact on the same 4-step diamond
 * (A, then B and C in parallel, then D; every step a durable no-op), closed loop, through the
 * same driver (bench-support.ts), warm-up and cells as bench:e2e, interleaved over rounds.
 *
 * Every system runs in processes of its own, started here and stopped at the end (also on
 * Ctrl-C or an error), all on 127.0.0.1:
 *
 * - restate: Restate's server binary (npm package @restatedev/restate-server, data in a temp
 *   dir) and its TypeScript SDK serving the diamond in a Node process (bench/peers/
 *   restate-service.mjs), registered through the admin API; one request to the ingress per
 *   execution, answered at the handler's end.
 * - dbos: DBOS Transact in a Node process (bench/peers/dbos-app.mjs) on its own PostgreSQL;
 *   one request to its HTTP handler per execution, answered at the workflow's end.
 * - flostra-full: Flostra (bench/peers-flostra-host.ts, every role and the worker in one Node
 *   process) on its own PostgreSQL and Kafka broker; the start over Flostra's HTTP API, the end
 *   seen on the event store's subscription as in bench:e2e.
 * - flostra-embedded: the same on PGlite (in memory, on a thread of its own: the default) and the
 *   in-process bus, one process.
 * - flostra-embedded-main (only when `--systems` names it): flostra-embedded with PGlite on the
 *   process's main thread (FLOSTRA_PGLITE_THREAD=main).
 *
 * All systems stay up for the whole run. Before each cell the benchmark waits (at most 90 s)
 * until all their processes together are quiet, so that what one system's last cell left it to
 * do (a read model catching up) does not land on the next system's cell; each cell reports how
 * long that took and the cores the other systems used while it ran.
 *
 * Restate and DBOS come from bench/peers/package-lock.json, installed with
 * `npm ci --prefix bench/peers` when missing (never by the root install).
 *
 * Prints one JSON document on stdout (progress on stderr) and writes docs/benchmarks-peers.svg.
 * `--profile` instead runs Flostra's full stack alone at 16 concurrent with a V8 CPU profile of
 * its process over the measured cell, profiles of its PostgreSQL (by statement and by function)
 * and of its Kafka broker (Java Flight Recorder) over the same cell, and reports where the time
 * goes (bench/peers-services-profile.ts).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PEERS_DIR = join(ROOT, 'bench', 'peers');
const FLOSTRA_HOST = fileURLToPath(new URL('./peers-flostra-host.js', import.meta.url));
const RESTATE_BINARY = join(PEERS_DIR, 'node_modules', '@restatedev', 'restate-server-linux-x64', 'bin', 'restate-server');
/** Node flags of every system's Node process: Flostra's deployments run with this young generation. */
const NODE_FLAGS = ['--min-semi-space-size=64', '--max-semi-space-size=64'];
const TOKEN = 'bench-token';
const CELL_WARMUP_SECONDS = 2;
const CLOCK_TICKS = 100;
const ALL_SYSTEMS = ['restate', 'dbos', 'flostra-full', 'flostra-embedded', 'flostra-embedded-main'] as const;
type SystemName = (typeof ALL_SYSTEMS)[number];
/** What a run measures unless `--systems` says otherwise. */
const DEFAULT_SYSTEMS: SystemName[] = ['restate', 'dbos', 'flostra-full', 'flostra-embedded'];

const log = (message: string) => process.stderr.write(`[bench:peers] ${message}\n`);

interface Options {
  seconds: number;
  stackWarmupSeconds: number;
  rounds: number;
  concurrency: number[];
  systems: SystemName[];
  profile: boolean;
  chart: string;
  /** Attempts Flostra's worker runs at once; the largest cell's concurrency unless given. */
  workerConcurrency: number;
}

function parseOptions(argv: string[]): Options {
  const options: Options = {
    seconds: Number(process.env.BENCH_SECONDS ?? 20),
    stackWarmupSeconds: STACK_WARMUP_SECONDS,
    rounds: 2,
    concurrency: [1, 16, 64],
    systems: [...DEFAULT_SYSTEMS],
    profile: false,
    chart: join(ROOT, 'docs', 'benchmarks-peers.svg'),
    workerConcurrency: Number.NaN,
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => inline ?? argv[++i] ?? '';
    if (flag === '--quick') {
      options.seconds = 5;
      options.stackWarmupSeconds = Math.min(options.stackWarmupSeconds, 10);
    } else if (flag === '--seconds') options.seconds = Number(value());
    else if (flag === '--warmup') options.stackWarmupSeconds = Number(value());
    else if (flag === '--rounds') options.rounds = Number(value());
    else if (flag === '--concurrency') options.concurrency = value().split(',').map(Number);
    else if (flag === '--systems') options.systems = value().split(',') as SystemName[];
    else if (flag === '--profile') options.profile = true;
    else if (flag === '--chart') options.chart = value();
    else if (flag === '--worker-concurrency') options.workerConcurrency = Number(value());
    else throw new Error(`unknown option ${argv[i]} (see the header of bench/peers.bench.ts)`);
  }
  if (!(options.seconds > 0) || !(options.rounds >= 1) || options.concurrency.some((c) => !(c >= 1)))
    throw new Error('--seconds, --rounds and --concurrency must be positive');
  for (const system of options.systems)
    if (!ALL_SYSTEMS.includes(system)) throw new Error(`unknown system ${system}; known: ${ALL_SYSTEMS.join(', ')}`);
  if (options.profile) options.systems = ['flostra-full'];
  // The peers' services set no cap on the invocations they run at once: Flostra's worker takes as
  // many attempts as the largest cell has executions in flight.
  if (Number.isNaN(options.workerConcurrency)) options.workerConcurrency = Math.max(...options.concurrency);
  if (!Number.isInteger(options.workerConcurrency) || options.workerConcurrency < 1 || options.workerConcurrency > 1000)
    throw new Error('--worker-concurrency must be an integer 1-1000');
  return options;
}

// ---------------------------------------------------------------------------------------------
// Processes: every child is tracked and killed on exit, Ctrl-C or error.

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping every process started`);
    process.exit(130); // the exit hooks kill the children, Postgres and the broker
  });
}

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function stopChild(child: ChildProcess, timeoutMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/** Resolves with the rest of the first stdout line starting with `prefix `; later lines go to `onLine`. */
function firstLine(child: ChildProcess, prefix: string, timeoutMs: number, onLine?: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => reject(new Error(`no "${prefix}" line within ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', (code) => {
      if (!done) reject(new Error(`process exited (${code}) before "${prefix}"`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!done && line.startsWith(`${prefix} `)) {
        done = true;
        clearTimeout(timer);
        resolve(line.slice(prefix.length + 1));
      } else onLine?.(line);
    });
  });
}

async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

// ---------------------------------------------------------------------------------------------
// /proc: CPU time and memory of a system's processes (each root with all its descendants).

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime + cutime + cstime, seconds: reaped children stay counted in their parent. */
  cpu: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    return { pid, ppid: Number(fields[1]), cpu: ticks / CLOCK_TICKS };
  } catch {
    return undefined; // exited meanwhile
  }
}

function allStats(): ProcStat[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((entry) => readStat(Number(entry)))
    .filter((stat): stat is ProcStat => stat !== undefined);
}

/** The roots and all their descendants. */
function processTree(roots: number[], stats: ProcStat[] = allStats()): ProcStat[] {
  const byParent = new Map<number, ProcStat[]>();
  for (const stat of stats) byParent.set(stat.ppid, [...(byParent.get(stat.ppid) ?? []), stat]);
  const found: ProcStat[] = [];
  const queue = stats.filter((stat) => roots.includes(stat.pid));
  while (queue.length > 0) {
    const next = queue.shift()!;
    found.push(next);
    queue.push(...(byParent.get(next.pid) ?? []));
  }
  return found;
}

type Components = Record<string, number[]>;

function cpuByComponent(components: Components): Record<string, number> {
  const stats = allStats();
  return Object.fromEntries(
    Object.entries(components).map(([name, roots]) => [name, processTree(roots, stats).reduce((sum, stat) => sum + stat.cpu, 0)]),
  );
}

/** Read and write system calls so far of each component's processes (/proc/<pid>/io). */
function syscallsByComponent(components: Components): Record<string, { reads: number; writes: number }> {
  const stats = allStats();
  return Object.fromEntries(
    Object.entries(components).map(([name, roots]) => {
      let reads = 0;
      let writes = 0;
      for (const { pid } of processTree(roots, stats)) {
        try {
          const io = readFileSync(`/proc/${pid}/io`, 'utf8');
          reads += Number(/^syscr: (\d+)/m.exec(io)?.[1] ?? 0);
          writes += Number(/^syscw: (\d+)/m.exec(io)?.[1] ?? 0);
        } catch {
          // gone, or not readable
        }
      }
      return [name, { reads, writes }];
    }),
  );
}

function statusKb(pid: number, field: string): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(
      readFileSync(`/proc/${pid}/${field === 'Pss' ? 'smaps_rollup' : 'status'}`, 'utf8'),
    );
    return match === null ? 0 : Number(match[1]);
  } catch {
    return 0;
  }
}

/**
 * Peak memory of each component over a cell: the kernel's peak RSS of each process (VmHWM,
 * reset before the cell by writing 5 to /proc/<pid>/clear_refs) summed over the component, and
 * the peak of the component's summed PSS sampled every 250 ms (shared memory, such as
 * Postgres' shared buffers, counted once).
 */
function memoryWatch(components: Components) {
  const pids = () => Object.fromEntries(Object.entries(components).map(([name, roots]) => [name, processTree(roots).map((s) => s.pid)]));
  let resetWorked = true;
  for (const list of Object.values(pids()))
    for (const pid of list) {
      try {
        writeFileSync(`/proc/${pid}/clear_refs`, '5');
      } catch {
        resetWorked = false;
      }
    }
  const pssPeak: Record<string, number> = {};
  const timer = setInterval(() => {
    for (const [name, list] of Object.entries(pids())) {
      const pss = list.reduce((sum, pid) => sum + statusKb(pid, 'Pss'), 0);
      pssPeak[name] = Math.max(pssPeak[name] ?? 0, pss);
    }
  }, 250);
  return () => {
    clearInterval(timer);
    return Object.fromEntries(
      Object.entries(pids()).map(([name, list]) => [
        name,
        {
          processes: list.length,
          peakRssMb: mb(list.reduce((sum, pid) => sum + statusKb(pid, 'VmHWM'), 0)),
          sampledPeakPssMb: mb(pssPeak[name] ?? 0),
          ...(resetWorked ? {} : { note: 'VmHWM could not be reset: peak since the process started' }),
        },
      ]),
    );
  };
}

const mb = (kb: number) => Math.round(kb / 102.4) / 10;

/** The postmaster of the server listening on `port` (pg_ctl detaches it from this process). */
function postmasterPid(url: string): number {
  const port = new URL(url).port;
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!argv[0].endsWith('/postgres')) continue;
      const joined = argv.join(' ');
      if (joined.includes(`-p ${port}`) || joined.includes(`-p=${port}`)) return Number(entry);
    } catch {
      // gone
    }
  }
  throw new Error(`no postmaster found for port ${port}`);
}

/** The Kafka broker's JVM: the child of this process running kafka.Kafka. */
function kafkaPid(): number {
  for (const stat of allStats().filter((s) => s.ppid === process.pid)) {
    try {
      if (readFileSync(`/proc/${stat.pid}/cmdline`, 'utf8').includes('kafka.Kafka')) return stat.pid;
    } catch {
      // gone
    }
  }
  throw new Error('no Kafka broker JVM found among this process’s children');
}

// ---------------------------------------------------------------------------------------------
// Systems.

interface System {
  name: SystemName;
  description: string;
  components: Components;
  once(): Promise<number>;
  stop(): Promise<void>;
  /** Flostra only: a CPU profile of its process between start and stop. */
  profile?: { start(): Promise<void>; stop(file: string): Promise<void> };
  /** Flostra `full` under `--profile` only: profiles of its PostgreSQL and its Kafka broker. */
  servicesProfile?: ServicesProfiler;
}

async function startRestate(): Promise<System> {
  if (process.getuid?.() !== 0 || spawnSync('unshare', ['--version']).status !== 0)
    throw new Error(
      'restate needs root and unshare(1): its server looks for new releases on api.github.com at start-up, ' +
        'which this benchmark points at 127.0.0.1 in a mount namespace of its own (loopback traffic only)',
    );
  const root = mkdtempSync(join(tmpdir(), 'flostra-peers-restate-'));
  const [fabric, ingress, admin, endpointPort] = await freePorts(4);
  // Nothing leaves the machine: telemetry is off, and the names Restate would reach out to
  // (the release check, the usage gateway) resolve to 127.0.0.1 for the server alone.
  const hosts = join(root, 'hosts');
  writeFileSync(hosts, `${readFileSync('/etc/hosts', 'utf8')}\n127.0.0.1 api.github.com restate.gateway.scarf.sh\n`);
  const config = join(root, 'restate.toml');
  writeFileSync(
    config,
    [
      'cluster-name = "flostra-peers"',
      'node-name = "peers"',
      `base-dir = "${join(root, 'data')}"`,
      'bind-ip = "127.0.0.1"',
      'listen-mode = "tcp"',
      'disable-telemetry = true',
      `bind-port = ${fabric}`,
      '[ingress]',
      `bind-port = ${ingress}`,
      '[admin]',
      `bind-port = ${admin}`,
      '',
    ].join('\n'),
  );
  const logFd = openSync(join(root, 'server.log'), 'a');
  const server = track(
    spawn(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        '--',
        'sh',
        '-c',
        `mount --bind "$1" /etc/hosts && exec "$2" --no-logo -c "$3"`,
        'sh',
        hosts,
        RESTATE_BINARY,
        config,
      ],
      { stdio: ['ignore', logFd, logFd], env: { PATH: process.env.PATH, HOME: root } },
    ),
  );
  closeSync(logFd);
  const endpoint = track(
    spawn(process.execPath, [...NODE_FLAGS, join(PEERS_DIR, 'restate-service.mjs')], {
      cwd: PEERS_DIR,
      env: { PATH: process.env.PATH, PORT: String(endpointPort), RESTATE_LOGGING: 'WARN' },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  await firstLine(endpoint, 'ready', 30_000);
  endpoint.stdout!.resume();
  const adminUrl = `http://127.0.0.1:${admin}`;
  await waitFor('restate admin API', 60_000, async () => (await fetch(`${adminUrl}/health`)).ok);
  await waitFor('restate deployment registration', 60_000, async () => {
    const response = await fetch(`${adminUrl}/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: `http://127.0.0.1:${endpointPort}`, force: true }),
    });
    return response.ok;
  });
  const ingressUrl = `http://127.0.0.1:${ingress}`;
  await waitFor('restate ingress', 60_000, async () => (await fetch(`${ingressUrl}/restate/health`)).ok);
  return {
    name: 'restate',
    description: `Restate ${versionOf('@restatedev/restate-server')} (single server binary, its own log and RocksDB, data in a temp dir) + TypeScript SDK ${versionOf('@restatedev/restate-sdk')} endpoint in a Node process; the diamond as one service handler of 4 ctx.run steps, b and c through RestatePromise.all; one ingress request per execution`,
    components: { 'restate-server': [server.pid!], 'sdk-node': [endpoint.pid!] },
    once: async () => {
      const started = performance.now();
      const response = await post(`${ingressUrl}/Diamond/run`, {}, '');
      if (response.status !== 200) throw new Error(`restate answered ${response.status}: ${response.body}`);
      return performance.now() - started;
    },
    stop: async () => {
      await stopChild(endpoint);
      await stopChild(server, 30_000);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function startDbos(): Promise<System> {
  const postgres = await startPostgresServer();
  const url = await createTestDatabase('peers_dbos', postgres.url);
  const app = track(
    spawn(process.execPath, [...NODE_FLAGS, join(PEERS_DIR, 'dbos-app.mjs')], {
      cwd: PEERS_DIR,
      env: { PATH: process.env.PATH, DBOS_SYSTEM_DATABASE_URL: url, PORT: '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  const port = await firstLine(app, 'ready', 60_000);
  app.stdout!.resume();
  const endpoint = `http://127.0.0.1:${port}/diamond`;
  return {
    name: 'dbos',
    description: `DBOS Transact ${versionOf('@dbos-inc/dbos-sdk')} in a Node process on its own PostgreSQL; the diamond as one workflow of 4 DBOS.runStep steps, b and c concurrently; one HTTP request to the app per execution`,
    components: { 'dbos-node': [app.pid!], postgres: [postmasterPid(postgres.url)] },
    once: async () => {
      const started = performance.now();
      const response = await post(endpoint, {}, '');
      if (response.status !== 200) throw new Error(`dbos answered ${response.status}: ${response.body}`);
      return performance.now() - started;
    },
    stop: async () => {
      await stopChild(app);
      await postgres.stop();
    },
  };
}

async function startFlostra(
  mode: 'full' | 'embedded',
  workerConcurrency: number,
  pgliteThread: 'main' | 'own' = 'own',
  profileServices = false,
): Promise<System> {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    PEERS_FLOSTRA_MODE: mode,
    PEERS_TOKEN: TOKEN,
    PEERS_WORKER_CONCURRENCY: String(workerConcurrency),
    FLOSTRA_PGLITE_THREAD: pgliteThread,
  };
  const components: Components = {};
  let stopServices = async () => undefined as void;
  let servicesProfile: ServicesProfiler | undefined;
  if (mode === 'full') {
    const postgres = await startPostgresServer(profileServices ? { settings: STATEMENT_PROFILE_SETTINGS } : {});
    const kafka = await startKafkaBroker({ reuseExisting: false });
    const databaseUrl = await createTestDatabase('peers_flostra', postgres.url);
    env.PEERS_DATABASE_URL = databaseUrl;
    env.PEERS_KAFKA_BROKERS = kafka.brokers.join(',');
    const postmaster = postmasterPid(postgres.url);
    components.postgres = [postmaster];
    components['kafka-jvm'] = [kafkaPid()];
    if (profileServices) {
      const dir = join(ROOT, '.cache', 'bench-peers');
      mkdirSync(dir, { recursive: true });
      servicesProfile = servicesProfiler({
        databaseUrl,
        postgresPids: () => processTree([postmaster]).map((stat) => stat.pid),
        kafkaPid: components['kafka-jvm'][0],
        filePrefix: join(dir, `flostra-full-c16-${new Date().toISOString().replace(/[:.]/g, '-')}`),
      });
    }
    stopServices = async () => {
      await kafka.stop();
      await postgres.stop();
    };
  }
  const host = track(spawn(process.execPath, [...NODE_FLAGS, FLOSTRA_HOST], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'inherit'] }));
  const waiters = new Map<string, () => void>();
  const early = new Set<string>();
  let profileAnswer: ((line: string) => void) | undefined;
  const url = await firstLine(host, 'ready', 180_000, (line) => {
    if (line.startsWith('done ')) {
      const id = line.slice(5);
      const waiter = waiters.get(id);
      if (waiter === undefined) early.add(id);
      else {
        waiters.delete(id);
        waiter();
      }
    } else if (line.startsWith('profil')) profileAnswer?.(line);
  });
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const command = (line: string) =>
    new Promise<void>((resolve) => {
      profileAnswer = () => resolve();
      host.stdin!.write(`${line}\n`);
    });
  return {
    name: mode === 'full' ? 'flostra-full' : pgliteThread === 'main' ? 'flostra-embedded-main' : 'flostra-embedded',
    description:
      mode === 'full'
        ? 'Flostra full: PostgreSQL event store and read models + Kafka (one KRaft broker), every role and the worker in one Node process; start over the HTTP API, end seen on the event store subscription'
        : `Flostra embedded: PGlite (in memory, ${pgliteThread === 'own' ? 'on a thread of its own' : 'on the main thread'}) + in-process bus, every role and the worker in one Node process; start over the HTTP API, end seen on the event store subscription`,
    components: { 'flostra-node': [host.pid!], ...components },
    once: async () => {
      const started = performance.now();
      const response = await post(`${url}/v1/workspaces/bench/workflows/diamond/executions`, headers, '{}');
      if (response.status !== 201) throw new Error(`start answered ${response.status}: ${response.body}`);
      const { executionId } = JSON.parse(response.body) as { executionId: string };
      if (!early.delete(executionId))
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`execution ${executionId} did not finish in 60 s`)), 60_000);
          waiters.set(executionId, () => {
            clearTimeout(timer);
            resolve();
          });
        });
      return performance.now() - started;
    },
    stop: async () => {
      await stopChild(host, 30_000);
      await stopServices();
    },
    profile: { start: () => command('profile-start'), stop: (file) => command(`profile-stop ${file}`) },
    servicesProfile,
  };
}

function startSystem(name: SystemName, options: Options): Promise<System> {
  if (name === 'restate') return startRestate();
  if (name === 'dbos') return startDbos();
  if (name === 'flostra-embedded-main') return startFlostra('embedded', options.workerConcurrency, 'main');
  return startFlostra(name === 'flostra-full' ? 'full' : 'embedded', options.workerConcurrency, 'own', options.profile);
}

function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(PEERS_DIR, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

/** Restate's and DBOS's packages, from bench/peers/package-lock.json; never part of the root install. */
function ensurePeersInstalled(needed: boolean): void {
  if (!needed || existsSync(join(PEERS_DIR, 'node_modules', '.package-lock.json'))) return;
  log('installing the peers from bench/peers/package-lock.json (npm ci --prefix bench/peers)');
  // --ignore-scripts: the server's binary comes as a platform package; no install script is needed.
  const result = spawnSync('npm', ['ci', '--prefix', PEERS_DIR, '--no-audit', '--no-fund', '--ignore-scripts'], {
    // npm's own report goes to stderr with the progress: stdout carries the JSON document alone.
    stdio: ['ignore', process.stderr, 'inherit'],
    timeout: 600_000,
  });
  if (result.status !== 0) throw new Error(`npm ci --prefix bench/peers failed (${result.error?.message ?? `exit ${result.status}`})`);
}

// ---------------------------------------------------------------------------------------------
// Cells.

interface Cell {
  concurrency: number;
  executions: number;
  executionsPerSec: number;
  latencyMs: ClosedLoopResult['latencyMs'];
  /** CPU seconds per execution of each of the system's processes (with their children), and in total. */
  cpuSecondsPerExecution: Record<string, number>;
  /** Read and write system calls per execution of each of the system's processes. */
  syscallsPerExecution: Record<string, { reads: number; writes: number }>;
  /** Every process on the machine, the benchmark's driver and other tenants included. */
  wholeMachineCpuSecondsPerExecution: number;
  /** Cores the other systems' processes used during the cell (their idle work, or a backlog left over). */
  othersCores: number;
  /** Seconds waited before the cell's warm-up for the other systems to go quiet (see `settle`). */
  settledAfterSeconds: number;
  memory?: Record<string, unknown>;
}

/** CPU seconds so far of all the processes of `systems`. */
function cpuOfSystems(systems: readonly System[]): number {
  const stats = allStats();
  let total = 0;
  for (const system of systems)
    for (const roots of Object.values(system.components)) for (const stat of processTree(roots, stats)) total += stat.cpu;
  return total;
}

/** What `settle` waits for: all systems together below this many cores over a window... */
const QUIET_CORES = 0.25;
const QUIET_WINDOW_MS = 2_000;
/** ...for at most this long; a system busy for longer is reported in the cell, not waited for. */
const SETTLE_LIMIT_MS = 90_000;

/**
 * Waits until every system's processes together use less than QUIET_CORES over a window: a
 * system that ran before may still be working off what its last cell left (a read model
 * catching up, a compaction), and that work would land on the next system's cells. Resolves to
 * the seconds waited.
 */
async function settle(systems: readonly System[]): Promise<number> {
  const began = Date.now();
  for (;;) {
    const before = cpuOfSystems(systems);
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    const cores = (cpuOfSystems(systems) - before) / (QUIET_WINDOW_MS / 1_000);
    if (cores < QUIET_CORES || Date.now() - began >= SETTLE_LIMIT_MS) return Math.round((Date.now() - began) / 100) / 10;
  }
}

async function measure(
  system: System,
  concurrency: number,
  seconds: number,
  watchMemory = false,
  others: readonly System[] = [],
): Promise<Cell> {
  const othersBefore = cpuOfSystems(others);
  const began = Date.now();
  const before = cpuByComponent(system.components);
  const ioBefore = syscallsByComponent(system.components);
  const stopWatch = watchMemory ? memoryWatch(system.components) : undefined;
  const result = await closedLoop(concurrency, seconds, system.once);
  const memory = stopWatch?.();
  const after = cpuByComponent(system.components);
  const othersCores = round3((cpuOfSystems(others) - othersBefore) / ((Date.now() - began) / 1_000));
  const ioAfter = syscallsByComponent(system.components);
  const per = (count: number) => Math.round((count / Math.max(1, result.executions)) * 10) / 10;
  const syscalls = Object.fromEntries(
    Object.keys(ioBefore).map((name) => [
      name,
      { reads: per(ioAfter[name].reads - ioBefore[name].reads), writes: per(ioAfter[name].writes - ioBefore[name].writes) },
    ]),
  );
  const perExecution: Record<string, number> = {};
  let total = 0;
  for (const name of Object.keys(before)) {
    const seconds = after[name] - before[name];
    total += seconds;
    perExecution[name] = round5(seconds / Math.max(1, result.executions));
  }
  perExecution.total = round5(total / Math.max(1, result.executions));
  return {
    concurrency,
    executions: result.executions,
    executionsPerSec: result.executionsPerSec,
    latencyMs: result.latencyMs,
    cpuSecondsPerExecution: perExecution,
    syscallsPerExecution: syscalls,
    wholeMachineCpuSecondsPerExecution: result.machineCpu,
    othersCores,
    settledAfterSeconds: 0,
    ...(memory !== undefined ? { memory } : {}),
  };
}

const round5 = (value: number) => Math.round(value * 1e5) / 1e5;
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

// ---------------------------------------------------------------------------------------------
// Run.

async function main() {
  const options = parseOptions(process.argv.slice(2));
  ensurePeersInstalled(options.systems.some((s) => s === 'restate' || s === 'dbos'));
  const perCell = options.seconds + CELL_WARMUP_SECONDS;
  const expected = options.profile
    ? 60 + options.stackWarmupSeconds + perCell
    : options.systems.length * (25 + options.stackWarmupSeconds) +
      options.rounds * options.systems.length * options.concurrency.length * perCell;
  log(
    `expected duration: about ${Math.ceil(expected / 60)} min (${options.systems.join(', ')}; ` +
      (options.profile ? 'profile at 16 concurrent' : `${options.rounds} rounds of ${options.concurrency.join('/')} concurrent`) +
      `, ${options.seconds}s cells, ${options.stackWarmupSeconds}s stack warm-up)`,
  );
  const began = Date.now();
  const systems = new Map<SystemName, System>();
  try {
    for (const name of options.systems) {
      log(`${name}: starting`);
      systems.set(name, await startSystem(name, options));
      log(`${name}: warming up at 16 concurrent for ${options.stackWarmupSeconds}s`);
      await measure(systems.get(name)!, 16, options.stackWarmupSeconds);
    }
    const report = options.profile ? await runProfile(systems.get('flostra-full')!, options) : await runRounds(systems, options);
    process.stdout.write(`${JSON.stringify({ ...report, elapsedSeconds: Math.round((Date.now() - began) / 1000) })}\n`);
  } finally {
    for (const system of systems.values()) {
      log(`${system.name}: stopping`);
      await system.stop().catch((error: unknown) => log(`${system.name}: stop failed: ${String(error)}`));
    }
  }
}

async function runRounds(systems: Map<SystemName, System>, options: Options) {
  const rounds: { round: number; order: SystemName[]; cells: Record<string, Record<string, Cell>> }[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    // Each round in another order: round 1 as given, round 2 reversed, round 3 rotated, ...
    const order = [...options.systems];
    if (round % 2 === 0) order.reverse();
    for (let shift = 0; shift < Math.floor((round - 1) / 2) % order.length; shift++) order.push(order.shift()!);
    const cells: Record<string, Record<string, Cell>> = {};
    for (const name of order) {
      const system = systems.get(name)!;
      cells[name] = {};
      const others = [...systems.values()].filter((other) => other !== system);
      for (const concurrency of options.concurrency) {
        const settledAfterSeconds = await settle([...systems.values()]);
        await measure(system, concurrency, CELL_WARMUP_SECONDS);
        log(`round ${round}: ${name} at ${concurrency} concurrent, ${options.seconds}s (quiet after ${settledAfterSeconds}s)`);
        const cell = {
          ...(await measure(system, concurrency, options.seconds, concurrency === Math.max(...options.concurrency), others)),
          settledAfterSeconds,
        };
        cells[name][String(concurrency)] = cell;
        log(
          `  ${cell.executionsPerSec}/s, p50 ${cell.latencyMs.p50} ms, p99 ${cell.latencyMs.p99} ms, ${cell.cpuSecondsPerExecution.total} CPU s per execution, others ${cell.othersCores} cores`,
        );
      }
    }
    rounds.push({ round, order, cells });
  }
  const ratios = computeRatios(rounds, options);
  const medians = computeMedians(rounds, options);
  writeFileSync(options.chart, chartSvg(medians, options, machineLabel()));
  log(`chart written to ${options.chart}`);
  return {
    benchmark:
      'diamond of 4 durable no-op steps (A, then B and C in parallel, then D), closed loop, one client request per execution through to its end',
    machine: machine(),
    secondsPerCell: options.seconds,
    flostraWorkerConcurrency: options.workerConcurrency,
    warmUpSeconds: { stackAt16: options.stackWarmupSeconds, eachCell: CELL_WARMUP_SECONDS },
    systems: Object.fromEntries(
      [...systems.values()].map((s) => [s.name, { description: s.description, processes: Object.keys(s.components) }]),
    ),
    rounds,
    medians,
    ratios,
    peakMemoryAtMaxConcurrency: Object.fromEntries(
      options.systems.map((name) => [name, rounds.map((r) => r.cells[name]?.[String(Math.max(...options.concurrency))]?.memory)]),
    ),
  };
}

type Medians = Record<string, Record<string, { executionsPerSec: number; p50: number; p99: number; cpuSecondsPerExecution: number }>>;

function computeMedians(rounds: { cells: Record<string, Record<string, Cell>> }[], options: Options): Medians {
  const result: Medians = {};
  for (const name of options.systems) {
    result[name] = {};
    for (const concurrency of options.concurrency.map(String)) {
      const cells = rounds.map((r) => r.cells[name]?.[concurrency]).filter((c): c is Cell => c !== undefined);
      result[name][concurrency] = {
        executionsPerSec: round3(median(cells.map((c) => c.executionsPerSec))),
        p50: round3(median(cells.map((c) => c.latencyMs.p50))),
        p99: round3(median(cells.map((c) => c.latencyMs.p99))),
        cpuSecondsPerExecution: round5(median(cells.map((c) => c.cpuSecondsPerExecution.total))),
      };
    }
  }
  return result;
}

/** Flostra over each peer, per concurrency, from the same round; then the median over rounds. */
function computeRatios(rounds: { round: number; cells: Record<string, Record<string, Cell>> }[], options: Options) {
  const pairs: [string, string][] = [];
  for (const flostra of ['flostra-full', 'flostra-embedded', 'flostra-embedded-main'])
    for (const peer of ['restate', 'dbos'])
      if (options.systems.includes(flostra as SystemName) && options.systems.includes(peer as SystemName)) pairs.push([flostra, peer]);
  const perRound = rounds.map((round) => ({
    round: round.round,
    ratios: Object.fromEntries(
      pairs.map(([flostra, peer]) => [
        `${flostra}/${peer}`,
        Object.fromEntries(
          options.concurrency.map((c) => {
            const ours = round.cells[flostra][String(c)];
            const theirs = round.cells[peer][String(c)];
            return [
              String(c),
              {
                throughput: round3(ours.executionsPerSec / theirs.executionsPerSec),
                p50: round3(ours.latencyMs.p50 / theirs.latencyMs.p50),
                cpuPerExecution: round3(ours.cpuSecondsPerExecution.total / theirs.cpuSecondsPerExecution.total),
              },
            ];
          }),
        ),
      ]),
    ),
  }));
  const medianOverRounds = Object.fromEntries(
    pairs.map(([flostra, peer]) => {
      const key = `${flostra}/${peer}`;
      return [
        key,
        Object.fromEntries(
          options.concurrency.map((c) => {
            const values = perRound.map((r) => r.ratios[key][String(c)]);
            return [
              String(c),
              {
                throughput: round3(median(values.map((v) => v.throughput))),
                p50: round3(median(values.map((v) => v.p50))),
                cpuPerExecution: round3(median(values.map((v) => v.cpuPerExecution))),
              },
            ];
          }),
        ),
      ];
    }),
  );
  return {
    note: 'throughput: Flostra executions/s over the peer (above 1: Flostra ahead); p50 and cpuPerExecution: Flostra over the peer (below 1: Flostra ahead)',
    perRound,
    medianOverRounds,
  };
}

async function runProfile(system: System, options: Options) {
  const dir = join(ROOT, '.cache', 'bench-peers');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `flostra-full-c16-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`);
  await measure(system, 16, CELL_WARMUP_SECONDS);
  log(`profiling flostra-full at 16 concurrent for ${options.seconds}s`);
  await system.servicesProfile!.start();
  await system.profile!.start();
  const cell = await measure(system, 16, options.seconds);
  await system.profile!.stop(file);
  const services = await system.servicesProfile!.stop(cell.executions);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const cpuSplit = Object.fromEntries(
    Object.entries(cell.cpuSecondsPerExecution)
      .filter(([name]) => name !== 'total')
      .map(([name, seconds]) => [
        name,
        { msPerExecution: round3(seconds * 1000), share: round3(seconds / cell.cpuSecondsPerExecution.total) },
      ]),
  );
  return {
    benchmark: 'Flostra full at 16 concurrent under a V8 CPU profile of its Node process (the profiler slows it a little)',
    machine: machine(),
    secondsPerCell: options.seconds,
    flostraWorkerConcurrency: options.workerConcurrency,
    cell,
    cpuSplitPerProcess: cpuSplit,
    profileFile: file,
    profile: summarizeCpuProfile(profile, cell.executions),
    services,
  };
}

function machine() {
  const postgres = spawnSync('sh', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1'], { encoding: 'utf8' }).stdout.trim();
  return {
    nproc: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    postgres: spawnSync(join(postgres, 'postgres'), ['--version'], { encoding: 'utf8' }).stdout?.trim(),
    peers: {
      restateServer: versionOf('@restatedev/restate-server'),
      restateSdk: versionOf('@restatedev/restate-sdk'),
      dbos: versionOf('@dbos-inc/dbos-sdk'),
    },
    loadAverageAtEnd: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  };
}

function machineLabel(): string {
  return `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${new Date().toISOString().slice(0, 10)}`;
}

// ---------------------------------------------------------------------------------------------
// Chart: hand-written SVG, throughput and p50 per concurrency, medians over rounds.

const COLORS: Record<string, string> = {
  restate: '#6b5bd2',
  dbos: '#2a9d8f',
  'flostra-full': '#e76f51',
  'flostra-embedded': '#f4a261',
  'flostra-embedded-main': '#e9c46a',
};

function chartSvg(medians: Medians, options: Options, label: string): string {
  const width = 920;
  const height = 380;
  const panel = { top: 60, bottom: 320, width: 400 };
  const systems = options.systems;
  const concurrencies = options.concurrency.map(String);
  const esc = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts: string[] = [];
  const drawPanel = (x0: number, title: string, value: (name: string, c: string) => number, unit: string, logScale: boolean) => {
    const values = systems.flatMap((name) => concurrencies.map((c) => value(name, c))).filter((v) => v > 0);
    const max = Math.max(...values, 1);
    const min = logScale ? Math.max(Math.min(...values) / 2, 0.1) : 0;
    const scale = (v: number) =>
      logScale
        ? panel.bottom -
          ((Math.log10(Math.max(v, min)) - Math.log10(min)) / (Math.log10(max * 1.15) - Math.log10(min))) * (panel.bottom - panel.top)
        : panel.bottom - (v / (max * 1.15)) * (panel.bottom - panel.top);
    parts.push(`<text x="${x0 + panel.width / 2}" y="40" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>`);
    parts.push(`<line x1="${x0}" y1="${panel.bottom}" x2="${x0 + panel.width}" y2="${panel.bottom}" stroke="#333"/>`);
    const groupWidth = panel.width / concurrencies.length;
    const barWidth = (groupWidth - 20) / systems.length;
    concurrencies.forEach((c, ci) => {
      const gx = x0 + ci * groupWidth + 10;
      parts.push(
        `<text x="${gx + (groupWidth - 20) / 2}" y="${panel.bottom + 18}" text-anchor="middle" font-size="12">${c} concurrent</text>`,
      );
      systems.forEach((name, si) => {
        const v = value(name, c);
        const y = scale(v);
        const x = gx + si * barWidth;
        parts.push(
          `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${(panel.bottom - y).toFixed(1)}" fill="${COLORS[name]}"><title>${esc(name)}: ${v} ${unit}</title></rect>`,
        );
        parts.push(
          `<text x="${(x + (barWidth - 2) / 2).toFixed(1)}" y="${(y - 4).toFixed(1)}" text-anchor="middle" font-size="9">${v >= 100 ? Math.round(v) : v.toFixed(1)}</text>`,
        );
      });
    });
    if (logScale) parts.push(`<text x="${x0}" y="${panel.top - 8}" font-size="10" fill="#555">log scale</text>`);
  };
  drawPanel(40, 'executions per second (higher is better)', (name, c) => medians[name][c].executionsPerSec, 'per s', false);
  drawPanel(480, 'p50 latency, ms (lower is better)', (name, c) => medians[name][c].p50, 'ms', true);
  // The legend shares the width between the systems shown.
  const legendStep = Math.floor((width - 80) / systems.length);
  systems.forEach((name, i) => {
    const x = 40 + i * legendStep;
    parts.push(`<rect x="${x}" y="${height - 30}" width="12" height="12" fill="${COLORS[name]}"/>`);
    parts.push(`<text x="${x + 18}" y="${height - 20}" font-size="12">${esc(name)}</text>`);
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="12" fill="#333">bench:peers, 4-step diamond, closed loop, median of ${options.rounds} interleaved rounds of ${options.seconds} s cells; ${esc(label)}</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench:peers failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
