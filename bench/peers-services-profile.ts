import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import pg from 'pg';

/**
 * Profiles of the two services beside Flostra's Node process in `bench:peers -- --profile`:
 *
 * - PostgreSQL, twice over: by statement (pg_stat_statements: execution and planning time, calls
 *   and rows of each statement, per execution) and by function (`perf record` of the postmaster
 *   and its backends, sampled on CPU time; PostgreSQL exports its functions' names, so a stripped
 *   binary still resolves). The statements say which of Flostra's requests cost the database
 *   most; the functions say what the server does with them (WAL, commits, the executor, parsing,
 *   index inserts, socket reads and writes in the kernel).
 * - The Kafka broker's JVM, with Java Flight Recorder (`jcmd JFR.start`, `settings=profile`):
 *   execution samples by top frame and by package.
 *
 * Each part needs its tool (`perf`, `jcmd` and `jfr` on PATH); a missing tool leaves its part
 * out of the report with the reason, never the whole profile.
 */

/** What pg_stat_statements needs, as server settings (`-c name=value`). */
export const STATEMENT_PROFILE_SETTINGS: Record<string, string> = {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track': 'all',
  'pg_stat_statements.track_planning': 'on',
  'pg_stat_statements.max': '5000',
};

/** Three decimals: what every figure of bench:peers' report carries. */
export const round3 = (value: number) => Math.round(value * 1000) / 1000;

function onPath(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
}

export interface ServicesProfiler {
  start(): Promise<void>;
  /** Stops every recording and summarises it per execution of the cell. */
  stop(executions: number): Promise<Record<string, unknown>>;
}

export function servicesProfiler(options: {
  databaseUrl: string;
  /** The postmaster and its backends, read when the recording starts. */
  postgresPids: () => number[];
  kafkaPid: number;
  /** Where the recordings go (perf.data and the .jfr file). */
  filePrefix: string;
}): ServicesProfiler {
  const perfFile = `${options.filePrefix}-postgres.perf.data`;
  const jfrFile = `${options.filePrefix}-kafka.jfr`;
  let perf: ChildProcess | undefined;
  let perfExit: Promise<void> | undefined;
  const missing: Record<string, string> = {};
  let client: pg.Client | undefined;

  return {
    async start() {
      client = new pg.Client({ connectionString: options.databaseUrl });
      await client.connect();
      await client.query('create extension if not exists pg_stat_statements');
      await client.query('select pg_stat_statements_reset()');
      await client.query(`select pg_stat_reset_shared('wal')`);
      if (onPath('perf')) {
        perf = spawn('perf', ['record', '-F', '499', '-g', '-o', perfFile, '-p', options.postgresPids().join(',')], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        perf.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        perfExit = new Promise((resolve) =>
          perf!.once('exit', (code, signal) => {
            if (code !== 0 && signal === null) missing.postgresFunctions = `perf record failed: ${stderr.trim().slice(-300)}`;
            resolve();
          }),
        );
      } else missing.postgresFunctions = 'perf is not on PATH';
      if (onPath('jcmd') && onPath('jfr')) {
        const started = spawnSync('jcmd', [String(options.kafkaPid), 'JFR.start', 'name=bench', 'settings=profile'], { encoding: 'utf8' });
        if (started.status !== 0) missing.kafkaBroker = `jcmd JFR.start failed: ${started.stdout}${started.stderr}`;
      } else missing.kafkaBroker = 'jcmd or jfr is not on PATH';
    },

    async stop(executions) {
      const report: Record<string, unknown> = {};
      if (perf !== undefined) {
        perf.kill('SIGINT');
        await perfExit;
      }
      if (missing.kafkaBroker === undefined) {
        const stopped = spawnSync('jcmd', [String(options.kafkaPid), 'JFR.stop', 'name=bench', `filename=${jfrFile}`], {
          encoding: 'utf8',
        });
        if (stopped.status !== 0 || !existsSync(jfrFile)) missing.kafkaBroker = `jcmd JFR.stop failed: ${stopped.stdout}${stopped.stderr}`;
      }
      report.postgresStatements = await statementProfile(client!, executions);
      await client!.end();
      report.postgresFunctions = missing.postgresFunctions ?? perfSummary(perfFile);
      report.kafkaBroker = missing.kafkaBroker ?? jfrSummary(jfrFile);
      report.files = { perf: perfFile, jfr: jfrFile };
      return report;
    },
  };
}

/** Statements by total time (execution + planning), per execution of the cell, and the WAL they wrote. */
async function statementProfile(client: pg.Client, executions: number) {
  const wal = (
    await client.query<{ wal_records: string; wal_fpi: string; wal_bytes: string; wal_write: string; wal_sync: string }>(
      'select wal_records, wal_fpi, wal_bytes, wal_write, wal_sync from pg_stat_wal',
    )
  ).rows[0];
  const { rows } = await client.query<{ query: string; calls: string; exec_ms: number; plan_ms: number; rows: string }>(
    `select query, calls, total_exec_time as exec_ms, total_plan_time as plan_ms, rows
       from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())`,
  );
  const total = rows.reduce((sum, row) => sum + row.exec_ms + row.plan_ms, 0);
  const calls = rows.reduce((sum, row) => sum + Number(row.calls), 0);
  const byTime = [...rows].sort((a, b) => b.exec_ms + b.plan_ms - (a.exec_ms + a.plan_ms));
  return {
    note: 'pg_stat_statements over the measured cell: time inside the executor and the planner, not parsing, the protocol or waiting for the client',
    statementMsPerExecution: round3(total / executions),
    walPerExecution: {
      records: round3(Number(wal.wal_records) / executions),
      fullPageImages: round3(Number(wal.wal_fpi) / executions),
      bytes: Math.round(Number(wal.wal_bytes) / executions),
      writes: round3(Number(wal.wal_write) / executions),
      syncs: round3(Number(wal.wal_sync) / executions),
    },
    callsPerExecution: round3(calls / executions),
    top: byTime.slice(0, 20).map((row) => ({
      statement: row.query.replace(/\s+/g, ' ').slice(0, 160),
      callsPerExecution: round3(Number(row.calls) / executions),
      msPerExecution: round3((row.exec_ms + row.plan_ms) / executions),
      planMsPerExecution: round3(row.plan_ms / executions),
      share: round3((row.exec_ms + row.plan_ms) / total),
      rowsPerCall: round3(Number(row.rows) / Math.max(1, Number(row.calls))),
    })),
  };
}

/**
 * Named stages of PostgreSQL's work, for their inclusive time (the function and all it calls):
 * what the server spends on Flostra's requests, stage by stage. They overlap (an index insert
 * runs inside a plpgsql function's statement), so their shares do not add up to one.
 */
const POSTGRES_STAGES: [string, string][] = [
  ['PortalRun', 'running statements (executor, from bind to the last row)'],
  ['plpgsql_exec_function', 'inside plpgsql functions (the event store appends, leases, checkpoints)'],
  ['jsonb_in', 'parsing jsonb parameters and values from text'],
  ['ExecMakeTableFunctionResult', 'set-returning functions (jsonb_to_recordset and the like)'],
  ['ExecInsertIndexTuples', 'index inserts'],
  ['heap_insert', 'heap row inserts'],
  ['heap_update', 'heap row updates'],
  ['MultiExecHash', 'building hash tables for joins'],
  ['GetCachedPlan', 'plan cache lookups and re-planning'],
  ['pg_plan_queries', 'planning statements sent without a cached plan'],
  ['pg_parse_query', 'parsing statement text'],
  ['pg_analyze_and_rewrite_fixedparams', 'analysing parsed statements'],
  ['CommitTransactionCommand', 'commits (WAL flush included)'],
  ['XLogInsert', 'writing WAL records into the buffers'],
  ['XLogFlush', 'flushing WAL at commit'],
  ['toast_compress_datum', 'compressing large values (TOAST)'],
  ['printtup', 'sending result rows'],
  ['secure_read', 'reading from client sockets'],
  ['secure_write', 'writing to client sockets'],
  ['epoll_wait', 'waiting for the client'],
  ['do_syscall_64', 'system calls (kernel)'],
];

function perfReport(file: string, args: string[]) {
  return spawnSync('perf', ['report', '-i', file, '--stdio', '-q', ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
}

/** perf's view of PostgreSQL: inclusive time of its named stages, and self time by function. */
function perfSummary(file: string) {
  const self = perfReport(file, ['--no-children', '--sort', 'dso,sym', '-g', 'none', '--percent-limit', '0.5']);
  const inclusive = perfReport(file, ['--children', '--sort', 'sym', '-g', 'none']);
  const counted = perfReport(file, ['--no-children', '--sort', 'comm', '-n', '-g', 'none']);
  const failed = [self, inclusive, counted].find((result) => result.status !== 0);
  if (failed !== undefined) return { error: `perf report failed: ${failed.stderr.trim().slice(-300)}` };
  const topFunctions: { share: number; dso: string; symbol: string }[] = [];
  for (const line of self.stdout.split('\n')) {
    const match = /^\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.+?)\s*$/.exec(line);
    if (match !== null) topFunctions.push({ share: round3(Number(match[1]) / 100), dso: match[2], symbol: match[3] });
  }
  const childrenOf = new Map<string, number>();
  for (const line of inclusive.stdout.split('\n')) {
    const match = /^\s*([\d.]+)%\s+[\d.]+%\s+\[[.k]\]\s+(\S+)\s*$/.exec(line);
    if (match !== null && !childrenOf.has(match[2])) childrenOf.set(match[2], Number(match[1]) / 100);
  }
  const samples = counted.stdout
    .split('\n')
    .map((line) => /^\s*[\d.]+%\s+(\d+)\s/.exec(line)?.[1])
    .reduce((sum, n) => sum + (n === undefined ? 0 : Number(n)), 0);
  return {
    note: 'perf record -F 499 -g of the postmaster and its backends over the cell (CPU time): stages by inclusive share (a function and all it calls; stages overlap), functions by self share',
    samples,
    stages: Object.fromEntries(
      POSTGRES_STAGES.filter(([symbol]) => childrenOf.has(symbol)).map(([symbol, what]) => [
        `${symbol}: ${what}`,
        round3(childrenOf.get(symbol)!),
      ]),
    ),
    topFunctions: topFunctions.slice(0, 25),
  };
}

interface JfrFrame {
  method: { type: { name: string }; name: string };
}

/** JFR execution samples of the broker: by top frame and by package of the top frame. */
function jfrSummary(file: string) {
  const printed = spawnSync('jfr', ['print', '--json', '--events', 'jdk.ExecutionSample', '--stack-depth', '1', file], {
    encoding: 'utf8',
    maxBuffer: 512 * 1024 * 1024,
  });
  if (printed.status !== 0) return { error: `jfr print failed: ${printed.stderr.trim().slice(-300)}` };
  const events = (JSON.parse(printed.stdout) as { recording: { events: { values: { stackTrace?: { frames: JfrFrame[] } } }[] } }).recording
    .events;
  const byMethod = new Map<string, number>();
  const byPackage = new Map<string, number>();
  for (const event of events) {
    const frame = event.values.stackTrace?.frames[0];
    const type = frame?.method.type.name.replaceAll('/', '.') ?? '(no Java frame)';
    const method = frame === undefined ? type : `${type}.${frame.method.name}`;
    const pkg = type.split('.').slice(0, -1).join('.') || type;
    byMethod.set(method, (byMethod.get(method) ?? 0) + 1);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + 1);
  }
  const top = (map: Map<string, number>, count: number) =>
    Object.fromEntries(
      [...map]
        .sort((a, b) => b[1] - a[1])
        .slice(0, count)
        .map(([key, n]) => [key, round3(n / Math.max(1, events.length))]),
    );
  return {
    note: 'Java Flight Recorder (settings=profile) over the cell: execution samples of Java threads, shares by top frame; time in native code and the JVM itself is not sampled',
    samples: events.length,
    byPackage: top(byPackage, 15),
    topMethods: top(byMethod, 20),
  };
}
