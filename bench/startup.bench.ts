import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * What `npm start` costs before anyone uses it: time from launching the start command to
 * `GET /health/ready` answering 200, and the resident memory (RSS) of the Flostra process once
 * it has idled, against a bare PGlite process opened on the same data directory in the same run.
 * Prints one JSON document on stdout; progress on stderr.
 *
 * Subjects (BENCH_STARTUP_SUBJECTS, comma list; default `npm-start,bare-pglite`):
 * - `npm-start`: `npm start` exactly as a person types it (its prestart, build check and flags),
 *   on sources already built (the bench runs the build check once before it measures); the
 *   memory is that of the Flostra node process under npm (npm's own process is reported apart,
 *   as `npmRssMb`);
 * - `node`: `node dist/src/main.js`;
 * - `node-semi64`: `node --min-semi-space-size=64 --max-semi-space-size=64 dist/src/main.js`;
 * - `bare-pglite`: a node process that only opens PGlite on `<dataDir>/pgdata` with PGlite's
 *   defaults, runs `select 1` and waits (ready = it says so on stdout);
 * - `baseline-npm-start`: `npm start` in another checkout, BENCH_STARTUP_BASELINE (a directory
 *   with its own node_modules), e.g. the commit before a change, so that before and after are
 *   measured in the same run.
 *
 * Cases (BENCH_STARTUP_CASES, default `existing,fresh`): `existing` runs every subject in turn on
 * one data directory that a first, unmeasured Flostra start initialised; `fresh` gives every run
 * a new, empty data directory (so PGlite creates its cluster, as on a first `npm start`).
 * BENCH_STARTUP_ROUNDS rounds (default 3); within a round, subjects and cases take turns in an
 * order rotated every round, so that a drift of this shared machine falls on all of them.
 *
 * After ready, a run idles BENCH_STARTUP_IDLE_SECONDS (default 10); then RSS is read from
 * /proc (`rssIdleMb`, what `ps` would show), and a probe loaded into the process with
 * NODE_OPTIONS (`--expose-gc --import`) runs two full GCs and reports `rssAfterGcMb` with a
 * breakdown: V8 heap spaces, external memory, the live WebAssembly memories (PGlite's), RSS
 * split into anonymous and file-backed pages. Then SIGINT goes to the run's process group, as
 * Ctrl-C in a terminal sends it, and the time to exit and the exit code are recorded.
 *
 * Medians over rounds are in `summary`; `vsBare` is the median over rounds of the subject's RSS
 * minus the bare PGlite's RSS of the same round and case. Compare figures only within one run.
 */

const ROUNDS = positiveInteger('BENCH_STARTUP_ROUNDS', 3);
const IDLE_SECONDS = Number(process.env.BENCH_STARTUP_IDLE_SECONDS ?? 10);
const SUBJECTS = list('BENCH_STARTUP_SUBJECTS', 'npm-start,bare-pglite') as Subject[];
const CASES = list('BENCH_STARTUP_CASES', 'existing,fresh') as Case[];
const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 20_000;

type Subject = 'npm-start' | 'node' | 'node-semi64' | 'bare-pglite' | 'baseline-npm-start';
type Case = 'existing' | 'fresh';
const KNOWN_SUBJECTS: readonly Subject[] = ['npm-start', 'node', 'node-semi64', 'bare-pglite', 'baseline-npm-start'];

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BASELINE = process.env.BENCH_STARTUP_BASELINE ? resolve(process.env.BENCH_STARTUP_BASELINE) : null;
const log = (message: string) => process.stderr.write(`[bench:startup] ${message}\n`);

function list(name: string, fallback: string): string[] {
  return (process.env[name] ?? fallback)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer; got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * Loaded into every measured process with `--import`. On SIGUSR2 it writes `<dir>/<pid>.json`:
 * RSS before and after two full GCs, and where the memory is. It counts WebAssembly memories by
 * wrapping the constructor (PGlite creates its memory with `new WebAssembly.Memory`); WeakRefs,
 * so that counting keeps nothing alive.
 */
const PROBE_SOURCE = `
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import v8 from 'node:v8';
const dir = process.env.BENCH_STARTUP_PROBE_DIR;
if (dir) {
  const memories = [];
  const NativeMemory = WebAssembly.Memory;
  WebAssembly.Memory = new Proxy(NativeMemory, {
    construct(target, args, newTarget) {
      const memory = Reflect.construct(target, args, newTarget);
      memories.push(new WeakRef(memory));
      return memory;
    },
  });
  const mb = (bytes) => Math.round((bytes / 1048576) * 10) / 10;
  const status = () => {
    const text = readFileSync('/proc/self/status', 'utf8');
    const kb = (key) => Number(new RegExp('^' + key + ':\\\\s+(\\\\d+) kB', 'm').exec(text)?.[1] ?? NaN);
    return { rssMb: mb(kb('VmRSS') * 1024), rssAnonMb: mb(kb('RssAnon') * 1024), rssFileMb: mb(kb('RssFile') * 1024), peakRssMb: mb(kb('VmHWM') * 1024) };
  };
  process.on('SIGUSR2', async () => {
    const before = status();
    if (typeof globalThis.gc === 'function') {
      globalThis.gc();
      await sleep(300);
      globalThis.gc();
    }
    await sleep(300);
    const usage = process.memoryUsage();
    const heap = v8.getHeapStatistics();
    const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, { sizeMb: mb(s.space_size), usedMb: mb(s.space_used_size) }]));
    const live = memories.map((ref) => ref.deref()).filter((m) => m !== undefined);
    const report = {
      before,
      after: status(),
      heapTotalMb: mb(usage.heapTotal),
      heapUsedMb: mb(usage.heapUsed),
      newSpaceMb: spaces.new_space?.sizeMb,
      oldSpaceUsedMb: spaces.old_space?.usedMb,
      codeSpaceMb: spaces.code_space?.sizeMb,
      largeObjectSpaceMb: spaces.large_object_space?.sizeMb,
      externalMb: mb(usage.external),
      arrayBuffersMb: mb(usage.arrayBuffers),
      mallocedMb: mb(heap.malloced_memory),
      wasmMemories: live.length,
      wasmMemoryMb: mb(live.reduce((sum, m) => sum + m.buffer.byteLength, 0)),
      wasmMemoriesEverCreated: memories.length,
    };
    writeFileSync(dir + '/' + process.pid + '.json', JSON.stringify(report));
  });
}
`;

/** Opens PGlite as a person trying it bare would: defaults, one query, then nothing. */
function barePgliteSource(pgdata: string): string {
  const pglite = import.meta.resolve('@electric-sql/pglite');
  return [
    `const { PGlite } = await import(${JSON.stringify(pglite)});`,
    // Held on globalThis: a module-scope binding nothing reads may be collected, and PGlite with it.
    `globalThis.db = await PGlite.create(${JSON.stringify(pgdata)});`,
    `await globalThis.db.query('select 1');`,
    `process.stdout.write('ready\\n');`,
    `process.on('SIGINT', async () => { await globalThis.db.close(); process.exit(0); });`,
    `setInterval(() => {}, 1 << 30);`,
  ].join('\n');
}

interface RunResult {
  subject: Subject;
  case: Case;
  round: number;
  readyMs: number;
  rssIdleMb: number;
  rssAfterGcMb: number | null;
  /** npm's own process, when the subject runs under npm. */
  npmRssMb: number | null;
  /** JSON log lines the process printed before its banner (Flostra subjects only). */
  logLinesBeforeBanner: number | null;
  stopMs: number;
  exitCode: number | null;
  /** The signal that ended it, when one did (npm ends on the SIGINT it forwarded). */
  exitSignal: string | null;
  probe: Record<string, unknown> | null;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

function ready(port: number): Promise<boolean> {
  return new Promise((resolveReady) => {
    const req = request({ host: '127.0.0.1', port, path: '/health/ready', method: 'GET', timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolveReady(res.statusCode === 200));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolveReady(false));
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readStatusKb(pid: number, key: string): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
}

const toMb = (kb: number) => Math.round((kb / 1024) * 10) / 10;

/** The node process among `pid` and its descendants that runs the script `needle`. */
function findProcess(pid: number, needle: string): number | null {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const queue = [pid];
  while (queue.length > 0) {
    const current = queue.shift()!;
    try {
      // A node process with the script as an argument: not the `sh -c` whose one argument ends with it.
      const args = readFileSync(`/proc/${current}/cmdline`, 'utf8').split('\0');
      if (/(^|\/)node$/.test(args[0] ?? '') && args.slice(1).some((arg) => arg.endsWith(needle))) return current;
    } catch {
      continue;
    }
    queue.push(...(children.get(current) ?? []));
  }
  return null;
}

function launch(subject: Subject, dataDir: string, port: number, probeDir: string, probeUrl: string): ChildProcess {
  const env = {
    ...process.env,
    FLOSTRA_DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc --import=${probeUrl}`.trim(),
    BENCH_STARTUP_PROBE_DIR: probeDir,
  };
  // Its own process group, so that SIGINT reaches every process of the run, as Ctrl-C does.
  const options = { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'] };
  switch (subject) {
    case 'npm-start':
      return spawn('npm', ['start'], options);
    case 'baseline-npm-start':
      return spawn('npm', ['start'], { ...options, cwd: BASELINE! });
    case 'node':
      return spawn(process.execPath, ['dist/src/main.js'], options);
    case 'node-semi64':
      return spawn(process.execPath, ['--min-semi-space-size=64', '--max-semi-space-size=64', 'dist/src/main.js'], options);
    case 'bare-pglite':
      return spawn(process.execPath, ['--input-type=module', '-e', barePgliteSource(join(dataDir, 'pgdata'))], options);
  }
}

async function runOnce(
  subject: Subject,
  kase: Case,
  round: number,
  dataDir: string,
  probeDir: string,
  probeUrl: string,
): Promise<RunResult> {
  const port = await freePort();
  let stdout = '';
  let stderr = '';
  const began = performance.now();
  const child = launch(subject, dataDir, port, probeDir, probeUrl);
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let exitCode: number | null | undefined;
  let exitSignal: string | null = null;
  const exited = new Promise<void>((r) => child.once('exit', (code, signal) => ((exitCode = code), (exitSignal = signal), r())));
  const fail = (why: string) =>
    new Error(`${subject} (${kase}, round ${round}): ${why}\n--- stdout\n${stdout.slice(-4000)}\n--- stderr\n${stderr.slice(-4000)}`);

  let readyMs = NaN;
  while (Number.isNaN(readyMs)) {
    if (exitCode !== undefined) throw fail(`exited with ${exitCode} before it was ready`);
    if (performance.now() - began > READY_TIMEOUT_MS) throw fail('not ready in time');
    const isReady = subject === 'bare-pglite' ? stdout.includes('ready\n') : await ready(port);
    if (isReady) readyMs = Math.round(performance.now() - began);
    else await sleep(20);
  }

  await sleep(IDLE_SECONDS * 1000);
  const pid = subject === 'bare-pglite' ? child.pid! : findProcess(child.pid!, 'dist/src/main.js');
  if (pid === null) throw fail('could not find the Flostra process');
  const rssIdleMb = toMb(readStatusKb(pid, 'VmRSS'));
  const npmRssMb = subject === 'npm-start' ? toMb(readStatusKb(child.pid!, 'VmRSS')) : null;

  process.kill(pid, 'SIGUSR2');
  const probeFile = join(probeDir, `${pid}.json`);
  const probeDeadline = performance.now() + 10_000;
  while (!existsSync(probeFile) && performance.now() < probeDeadline) await sleep(50);
  let probe: Record<string, unknown> | null = null;
  try {
    probe = JSON.parse(readFileSync(probeFile, 'utf8')) as Record<string, unknown>;
  } catch {
    log(`no probe report from ${subject} (pid ${pid})`);
  }

  const stopBegan = performance.now();
  process.kill(-child.pid!, 'SIGINT');
  const stopped = await Promise.race([exited.then(() => true), sleep(STOP_TIMEOUT_MS).then(() => false)]);
  if (!stopped) {
    process.kill(-child.pid!, 'SIGKILL');
    await exited;
  }
  const stopMs = Math.round(performance.now() - stopBegan);

  const bannerAt = stdout.indexOf('Flostra is listening on');
  const logLinesBeforeBanner =
    subject === 'bare-pglite' || bannerAt < 0
      ? null
      : stdout
          .slice(0, bannerAt)
          .split('\n')
          .filter((line) => line.startsWith('{')).length;

  return {
    subject,
    case: kase,
    round,
    readyMs,
    rssIdleMb,
    rssAfterGcMb: (probe?.after as { rssMb?: number } | undefined)?.rssMb ?? null,
    npmRssMb,
    logLinesBeforeBanner,
    stopMs,
    exitCode: stopped ? (exitCode ?? null) : null,
    exitSignal: stopped ? exitSignal : 'SIGKILL',
    probe,
  };
}

function median(values: number[]): number | null {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const mid = Math.floor(sorted.length / 2);
  const m = sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return Math.round(m * 10) / 10;
}

function rotate<T>(items: readonly T[], by: number): T[] {
  const k = items.length === 0 ? 0 : by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

async function main(): Promise<void> {
  for (const s of SUBJECTS) if (!KNOWN_SUBJECTS.includes(s)) throw new Error(`unknown subject ${s}; known: ${KNOWN_SUBJECTS.join(', ')}`);
  for (const c of CASES) if (c !== 'existing' && c !== 'fresh') throw new Error(`unknown case ${c}; known: existing, fresh`);
  if (!existsSync(join(root, 'dist/src/main.js'))) throw new Error('dist/src/main.js is missing: build first');
  if (SUBJECTS.includes('baseline-npm-start') && (BASELINE === null || !existsSync(join(BASELINE, 'package.json')))) {
    throw new Error('baseline-npm-start needs BENCH_STARTUP_BASELINE: a checkout with its node_modules');
  }
  if (SUBJECTS.includes('npm-start')) {
    // What is measured is a start without changes: whatever built dist/, npm start's own build
    // check must find it current before the first measured run.
    const check = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    if (check.status !== 0) throw new Error(`scripts/build.mjs --if-stale failed (${check.status ?? check.error?.message})`);
  }

  const scratch = mkdtempSync(join(tmpdir(), 'flostra-bench-startup-'));
  const probeDir = join(scratch, 'probe');
  const probePath = join(scratch, 'probe.mjs');
  writeFileSync(probePath, PROBE_SOURCE);
  mkdirSync(probeDir);
  const probeUrl = pathToFileURL(probePath).href;
  const existingDir = join(scratch, 'existing');
  let freshCount = 0;
  const runs: RunResult[] = [];
  const startedAt = new Date().toISOString();
  const load = loadavg();

  try {
    if (CASES.includes('existing')) {
      log('initialising the existing data directory with one unmeasured Flostra start');
      await runOnce('node', 'existing', 0, existingDir, probeDir, probeUrl);
    }
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const kase of rotate(CASES, round)) {
        for (const subject of rotate(SUBJECTS, round)) {
          const dataDir = kase === 'existing' ? existingDir : join(scratch, `fresh-${++freshCount}`);
          // PGlite creates `pgdata` but not its parent.
          if (kase === 'fresh') mkdirSync(dataDir);
          const result = await runOnce(subject, kase, round, dataDir, probeDir, probeUrl);
          log(
            `round ${round} ${kase} ${subject}: ready ${result.readyMs} ms, rss idle ${result.rssIdleMb} MB, after GC ${result.rssAfterGcMb} MB, stop ${result.stopMs} ms (${result.exitSignal ?? `exit ${result.exitCode}`})`,
          );
          runs.push(result);
          if (kase === 'fresh') rmSync(dataDir, { recursive: true, force: true });
        }
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }

  const summary: Record<string, Record<string, unknown>> = {};
  for (const kase of CASES) {
    summary[kase] = {};
    for (const subject of SUBJECTS) {
      const mine = runs.filter((r) => r.case === kase && r.subject === subject);
      const bare = (round: number) => runs.find((r) => r.case === kase && r.subject === 'bare-pglite' && r.round === round);
      const diff = (pick: (r: RunResult) => number | null) =>
        median(
          mine.map((r) => {
            const b = bare(r.round);
            const mineValue = pick(r);
            const bareValue = b === undefined ? null : pick(b);
            return mineValue === null || bareValue === null ? NaN : mineValue - bareValue;
          }),
        );
      const probeMedian = (key: string) => median(mine.map((r) => Number(r.probe?.[key] ?? NaN)));
      const afterMedian = (key: string) =>
        median(mine.map((r) => Number((r.probe?.after as Record<string, number> | undefined)?.[key] ?? NaN)));
      summary[kase][subject] = {
        readyMs: median(mine.map((r) => r.readyMs)),
        readyMsRange: [Math.min(...mine.map((r) => r.readyMs)), Math.max(...mine.map((r) => r.readyMs))],
        rssIdleMb: median(mine.map((r) => r.rssIdleMb)),
        rssAfterGcMb: median(mine.map((r) => r.rssAfterGcMb ?? NaN)),
        ...(subject === 'bare-pglite' || !SUBJECTS.includes('bare-pglite')
          ? {}
          : { vsBare: { rssIdleMb: diff((r) => r.rssIdleMb), rssAfterGcMb: diff((r) => r.rssAfterGcMb) } }),
        npmRssMb: subject === 'npm-start' ? median(mine.map((r) => r.npmRssMb ?? NaN)) : undefined,
        logLinesBeforeBanner: subject === 'bare-pglite' ? undefined : median(mine.map((r) => r.logLinesBeforeBanner ?? NaN)),
        stopMs: median(mine.map((r) => r.stopMs)),
        exits: [...new Set(mine.map((r) => (r.exitSignal !== null ? r.exitSignal : `code ${r.exitCode}`)))],
        afterGc: {
          rssAnonMb: afterMedian('rssAnonMb'),
          rssFileMb: afterMedian('rssFileMb'),
          peakRssMb: afterMedian('peakRssMb'),
          heapTotalMb: probeMedian('heapTotalMb'),
          heapUsedMb: probeMedian('heapUsedMb'),
          newSpaceMb: probeMedian('newSpaceMb'),
          externalMb: probeMedian('externalMb'),
          arrayBuffersMb: probeMedian('arrayBuffersMb'),
          mallocedMb: probeMedian('mallocedMb'),
          wasmMemoryMb: probeMedian('wasmMemoryMb'),
          wasmMemories: probeMedian('wasmMemories'),
        },
      };
    }
  }

  const document = {
    bench: 'startup',
    startedAt,
    machine: { cpus: cpus().length, node: process.version, loadAverageAtStart: load.map((l) => Math.round(l * 100) / 100) },
    settings: { rounds: ROUNDS, idleSeconds: IDLE_SECONDS, subjects: SUBJECTS, cases: CASES, baseline: BASELINE },
    summary,
    runs,
  };
  process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`[bench:startup] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
