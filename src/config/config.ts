import { resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_LEASE_TIMINGS } from '../core/lease.port.js';
import type { LogThreshold } from '../core/logger.js';
import { DEFAULT_EXECUTION_LIMITS, type ExecutionLimits } from '../executions/domain/execution-limits.js';

/** The processes one Flostra binary can run (docs/architecture.md, "Processes and roles"). */
export const PROCESS_ROLES = ['api', 'dispatcher', 'ingestor', 'projector', 'scheduler', 'timer', 'watchdog', 'worker'] as const;
export type ProcessRole = (typeof PROCESS_ROLES)[number];

const LOG_THRESHOLDS = ['debug', 'info', 'warn', 'error', 'silent'] as const satisfies readonly LogThreshold[];

/** FLOSTRA_WORKER_TRANSPORT: see `workerTransportOf`. */
const WORKER_TRANSPORTS = ['auto', 'in-process', 'http'] as const;

/** FLOSTRA_WORKER_RESULTS: see `workerResultsOf`. */
const WORKER_RESULTS = ['auto', 'in-process', 'bus'] as const;

/** FLOSTRA_WORKER_DISPATCH: see `workerDispatchOf`. */
const WORKER_DISPATCHES = ['auto', 'in-process', 'bus'] as const;

/** FLOSTRA_PGLITE_THREAD: where the embedded PGlite runs. */
const PGLITE_THREADS = ['own', 'main'] as const;

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** See `ProjectorOptions.gatherMs`. */
export const DEFAULT_PROJECTOR_GATHER_MS = 50;

/** HTTP time limits (docs/operations.md, "Resource limits"). */
export const DEFAULT_HTTP_HEADERS_TIMEOUT_MS = 20_000;
export const DEFAULT_HTTP_BODY_TIMEOUT_MS = 30_000;
export const DEFAULT_HTTP_REQUEST_TIMEOUT_MS = 60_000;

/** Limits of one `transform` evaluation, and the evaluator processes of one worker. */
export const DEFAULT_TRANSFORM_TIMEOUT_MS = 1_000;
export const DEFAULT_TRANSFORM_MEMORY_MB = 64;
export const DEFAULT_TRANSFORM_PROCESSES = 2;

/** The code sandbox of one worker: its threads and each workspace's share of them; the api's compile check. */
export const DEFAULT_CODE_THREADS = 2;
export const DEFAULT_CODE_CPU_BUDGET_MS = 30_000;
export const DEFAULT_CODE_CPU_WINDOW_MS = 60_000;
export const DEFAULT_CODE_CHECK_TIMEOUT_MS = 2_000;

/** Open SSE streams: per token, and for the whole process. */
export const DEFAULT_SSE_MAX_STREAMS_PER_TOKEN = 50;
export const DEFAULT_SSE_MAX_STREAMS = 5_000;
export const DEFAULT_HTTP_MAX_INFLIGHT_PER_TOKEN = 4;
export const DEFAULT_HTTP_MAX_QUEUED_PER_TOKEN = 1_000;
export const DEFAULT_HTTP_CONTENTION_WINDOW_MS = 1_000;

/** Schedules one workspace may hold, and the least time between two of a schedule's fire times. */
export const DEFAULT_MAX_SCHEDULES_PER_WORKSPACE = 100;
export const DEFAULT_SCHEDULE_MIN_INTERVAL_SECONDS = 60;

/** FLOSTRA_METRICS_AUTH: who may read `/metrics` on the API's port (docs/operations.md, "Metrics"). */
export const METRICS_AUTH_MODES = ['none', 'token'] as const;
export type MetricsAuth = (typeof METRICS_AUTH_MODES)[number];

/** The longest a change to the tokens file waits to be read while changes keep coming. */
export const DEFAULT_TOKENS_RELOAD_MAX_DELAY_MS = 500;

/** Browser sessions of one api process: in all, and of one subject (docs/console.md). */
export const DEFAULT_SESSIONS_MAX = 10_000;
export const DEFAULT_SESSIONS_PER_SUBJECT = 20;

/** Sign-ins (`POST /v1/sessions`) per minute: from one client address, and with one token. */
export const DEFAULT_SIGN_IN_PER_MINUTE_PER_ADDRESS = 20;
export const DEFAULT_SIGN_IN_PER_MINUTE_PER_TOKEN = 10;

/** Workspaces with metric series of their own (FLOSTRA_METRICS_MAX_WORKSPACES). */
export const DEFAULT_METRICS_MAX_WORKSPACES = 100;

/** Executions one sub-workflow tree may hold, its root included, where the workspace sets no bound (FLOSTRA_MAX_EXECUTIONS_PER_TREE). */
export const DEFAULT_MAX_EXECUTIONS_PER_TREE = 1_000;
/** Larger values of an execution's view are summarized (FLOSTRA_EXECUTION_VIEW_VALUE_MAX_BYTES). */
export const DEFAULT_VIEW_VALUE_MAX_BYTES = 64 * 1024;

/** A page of an execution's history ends once its events pass this (FLOSTRA_HISTORY_PAGE_MAX_BYTES). */
export const DEFAULT_HISTORY_PAGE_MAX_BYTES = 4 * 1024 * 1024;

/** How long a stopping process waits for its running work (FLOSTRA_SHUTDOWN_GRACE_MS). */
export const DEFAULT_SHUTDOWN_GRACE_MS = 20_000;

/** Start-up stops on it; the message names every offending variable. */
export class ConfigError extends Error {
  constructor(
    message: string,
    /** Names of the variables at fault. */
    readonly variables: readonly string[] = [],
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * 32 bytes of an encryption key read from the environment. It shows itself as `[secret key]`
 * to JSON and to `util.inspect`, so a configuration that is logged or printed never carries it.
 */
export class SecretKeyBytes {
  readonly #bytes: Buffer;

  constructor(bytes: Buffer) {
    this.#bytes = Buffer.from(bytes);
  }

  get bytes(): Buffer {
    return this.#bytes;
  }

  toJSON(): string {
    return '[secret key]';
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return '[secret key]';
  }
}

/** A 32-byte key written as 64 hex digits or as base64 / base64url (43 characters, or 44 with its `=`); null otherwise. */
export function parseSecretKeyText(text: string): SecretKeyBytes | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return new SecretKeyBytes(Buffer.from(text, 'hex'));
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) return null;
  const bytes = Buffer.from(text.replaceAll('-', '+').replaceAll('_', '/'), 'base64');
  return bytes.length === 32 ? new SecretKeyBytes(bytes) : null;
}

const KEY_FORMAT = '32 bytes written as base64 (44 characters) or hex (64 characters)';

type Ctx = z.RefinementCtx;

/** Adds one issue and yields z.NEVER, so each variable's parser reads as one expression. */
function fail(ctx: Ctx, message: string): never {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
}

const optional = z.string().optional();

/** An integer variable within bounds, or its default when unset. */
function integer(fallback: number, min: number, max: number, unit = '') {
  return optional.transform((raw, ctx) => {
    if (raw === undefined) return fallback;
    const n = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
    return n >= min && n <= max ? n : fail(ctx, `expected an integer${unit} ${min}-${max}`);
  });
}

function urlScheme(raw: string): string | null {
  try {
    return new URL(raw).protocol;
  } catch {
    return null;
  }
}

const envSchema = z.object({
  HOST: optional.transform((raw, ctx) =>
    raw === undefined ? '127.0.0.1' : /\s/.test(raw) ? fail(ctx, 'expected a host name or address') : raw,
  ),
  PORT: optional.transform((raw, ctx) => {
    if (raw === undefined) return 3000;
    const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
    return port >= 0 && port <= 65535 ? port : fail(ctx, 'expected an integer 0-65535');
  }),
  FLOSTRA_DATA_DIR: optional.transform((raw) => resolve(raw ?? './.flostra')),
  FLOSTRA_ROLES: optional.transform((raw, ctx) => {
    if (raw === undefined) return [...PROCESS_ROLES];
    const roles = raw
      .split(',')
      .map((r) => r.trim())
      .filter((r) => r !== '');
    const unknown = roles.filter((r) => !(PROCESS_ROLES as readonly string[]).includes(r));
    if (roles.length === 0 || unknown.length > 0) {
      return fail(ctx, `expected a comma-separated list of ${PROCESS_ROLES.join(', ')}`);
    }
    return PROCESS_ROLES.filter((r) => roles.includes(r));
  }),
  EVENT_STORE_URL: optional.transform((raw, ctx) => {
    if (raw === undefined) return { kind: 'pglite' as const };
    const scheme = urlScheme(raw);
    if (scheme === 'postgres:' || scheme === 'postgresql:') return { kind: 'postgres' as const, url: raw };
    if (scheme === 'esdb:' || scheme === 'kurrentdb:') return { kind: 'kurrentdb' as const, url: raw };
    return fail(ctx, 'expected a postgres://, postgresql://, esdb:// or kurrentdb:// URL');
  }),
  DATABASE_URL: optional.transform((raw, ctx) => {
    if (raw === undefined) return null;
    const scheme = urlScheme(raw);
    return scheme === 'postgres:' || scheme === 'postgresql:' ? raw : fail(ctx, 'expected a postgres:// or postgresql:// URL');
  }),
  KAFKA_BROKERS: optional.transform((raw, ctx) => {
    if (raw === undefined) return null;
    const brokers = raw
      .split(',')
      .map((b) => b.trim())
      .filter((b) => b !== '');
    const valid = (b: string) => {
      const match = /^([^\s:/]+|\[[0-9a-fA-F:.]+\]):(\d{1,5})$/.exec(b);
      return match !== null && Number(match[2]) >= 1 && Number(match[2]) <= 65535;
    };
    return brokers.length > 0 && brokers.every(valid) ? brokers : fail(ctx, 'expected a comma-separated list of host:port');
  }),
  FLOSTRA_TOKENS_FILE: optional.transform((raw) => (raw === undefined ? null : resolve(raw))),
  FLOSTRA_TOKENS_RELOAD: optional.transform((raw, ctx) => {
    const mode = raw?.toLowerCase() ?? 'watch';
    return mode === 'watch' || mode === 'sighup' ? mode : fail(ctx, 'expected watch or sighup');
  }),
  FLOSTRA_TOKENS_RELOAD_MAX_DELAY_MS: integer(DEFAULT_TOKENS_RELOAD_MAX_DELAY_MS, 10, 60_000, ' number of milliseconds'),
  FLOSTRA_SESSIONS_MAX: integer(DEFAULT_SESSIONS_MAX, 1, 1_000_000),
  FLOSTRA_SESSIONS_PER_SUBJECT: integer(DEFAULT_SESSIONS_PER_SUBJECT, 1, 1_000_000),
  FLOSTRA_SIGN_IN_PER_MINUTE_PER_ADDRESS: integer(DEFAULT_SIGN_IN_PER_MINUTE_PER_ADDRESS, 1, 1_000_000),
  FLOSTRA_SIGN_IN_PER_MINUTE_PER_TOKEN: integer(DEFAULT_SIGN_IN_PER_MINUTE_PER_TOKEN, 1, 1_000_000),
  FLOSTRA_MAX_BODY_BYTES: optional.transform((raw, ctx) => {
    if (raw === undefined) return DEFAULT_MAX_BODY_BYTES;
    const bytes = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
    return bytes >= 1 && Number.isSafeInteger(bytes) ? bytes : fail(ctx, 'expected a positive integer number of bytes');
  }),
  FLOSTRA_API_URL: optional.transform((raw, ctx) => {
    if (raw === undefined) return null;
    const scheme = urlScheme(raw);
    return scheme === 'http:' || scheme === 'https:'
      ? raw.replace(/\/+$/, '')
      : fail(ctx, 'expected an http:// or https:// URL of the api');
  }),
  FLOSTRA_WORKER_TOKEN: optional.transform((raw) => raw ?? null),
  FLOSTRA_WORKER_TRANSPORT: optional.transform((raw, ctx) => {
    const transport = raw?.toLowerCase() ?? 'auto';
    return WORKER_TRANSPORTS.find((known) => known === transport) ?? fail(ctx, `expected one of ${WORKER_TRANSPORTS.join(', ')}`);
  }),
  FLOSTRA_WORKER_RESULTS: optional.transform((raw, ctx) => {
    const results = raw?.toLowerCase() ?? 'auto';
    return WORKER_RESULTS.find((known) => known === results) ?? fail(ctx, `expected one of ${WORKER_RESULTS.join(', ')}`);
  }),
  FLOSTRA_WORKER_DISPATCH: optional.transform((raw, ctx) => {
    const dispatch = raw?.toLowerCase() ?? 'auto';
    return WORKER_DISPATCHES.find((known) => known === dispatch) ?? fail(ctx, `expected one of ${WORKER_DISPATCHES.join(', ')}`);
  }),
  FLOSTRA_PGLITE_THREAD: optional.transform((raw, ctx) => {
    const thread = raw?.toLowerCase() ?? 'own';
    return PGLITE_THREADS.find((known) => known === thread) ?? fail(ctx, `expected one of ${PGLITE_THREADS.join(', ')}`);
  }),
  FLOSTRA_WORKER_CONCURRENCY: optional.transform((raw, ctx) => {
    if (raw === undefined) return 8;
    const n = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
    return n >= 1 && n <= 1000 ? n : fail(ctx, 'expected an integer 1-1000');
  }),
  FLOSTRA_PROJECTOR_GATHER_MS: optional.transform((raw, ctx) => {
    if (raw === undefined) return DEFAULT_PROJECTOR_GATHER_MS;
    const ms = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
    return ms >= 0 && ms <= 10_000 ? ms : fail(ctx, 'expected an integer number of milliseconds 0-10000');
  }),
  FLOSTRA_HTTP_HEADERS_TIMEOUT_MS: integer(DEFAULT_HTTP_HEADERS_TIMEOUT_MS, 100, 3_600_000, ' number of milliseconds'),
  FLOSTRA_HTTP_BODY_TIMEOUT_MS: integer(DEFAULT_HTTP_BODY_TIMEOUT_MS, 100, 3_600_000, ' number of milliseconds'),
  FLOSTRA_HTTP_REQUEST_TIMEOUT_MS: integer(DEFAULT_HTTP_REQUEST_TIMEOUT_MS, 100, 3_600_000, ' number of milliseconds'),
  FLOSTRA_SSE_MAX_STREAMS_PER_TOKEN: integer(DEFAULT_SSE_MAX_STREAMS_PER_TOKEN, 1, 1_000_000),
  FLOSTRA_SSE_MAX_STREAMS: integer(DEFAULT_SSE_MAX_STREAMS, 1, 1_000_000),
  FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN: integer(DEFAULT_HTTP_MAX_INFLIGHT_PER_TOKEN, 1, 100_000),
  FLOSTRA_HTTP_MAX_QUEUED_PER_TOKEN: integer(DEFAULT_HTTP_MAX_QUEUED_PER_TOKEN, 0, 1_000_000),
  FLOSTRA_HTTP_CONTENTION_WINDOW_MS: integer(DEFAULT_HTTP_CONTENTION_WINDOW_MS, 0, 3_600_000, ' number of milliseconds'),
  FLOSTRA_TRANSFORM_TIMEOUT_MS: integer(DEFAULT_TRANSFORM_TIMEOUT_MS, 10, 600_000, ' number of milliseconds'),
  FLOSTRA_TRANSFORM_MEMORY_MB: integer(DEFAULT_TRANSFORM_MEMORY_MB, 16, 4_096, ' number of MB'),
  FLOSTRA_TRANSFORM_PROCESSES: integer(DEFAULT_TRANSFORM_PROCESSES, 1, 64),
  FLOSTRA_CODE_THREADS: integer(DEFAULT_CODE_THREADS, 1, 64),
  FLOSTRA_CODE_CPU_BUDGET_MS: integer(DEFAULT_CODE_CPU_BUDGET_MS, 1, 86_400_000, ' number of milliseconds'),
  FLOSTRA_CODE_CPU_WINDOW_MS: integer(DEFAULT_CODE_CPU_WINDOW_MS, 1_000, 86_400_000, ' number of milliseconds'),
  FLOSTRA_CODE_CHECK_TIMEOUT_MS: integer(DEFAULT_CODE_CHECK_TIMEOUT_MS, 1, 600_000, ' number of milliseconds'),
  FLOSTRA_EGRESS_ALLOW: optional.transform((raw) =>
    raw === undefined
      ? []
      : raw
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry !== ''),
  ),
  FLOSTRA_SECRETS_KEY: optional.transform((raw, ctx) => {
    if (raw === undefined) return null;
    return parseSecretKeyText(raw) ?? fail(ctx, `expected ${KEY_FORMAT}`);
  }),
  FLOSTRA_SECRETS_PREVIOUS_KEYS: optional.transform((raw, ctx) => {
    if (raw === undefined) return [];
    const entries = raw
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
    const keys = entries.map(parseSecretKeyText);
    const bad = keys.findIndex((key) => key === null);
    return bad === -1
      ? (keys as SecretKeyBytes[])
      : fail(ctx, `expected a comma-separated list of keys of ${KEY_FORMAT}; entry ${bad + 1} is not one`);
  }),
  FLOSTRA_METRICS_PORT: optional.transform((raw, ctx) => {
    if (raw === undefined) return null;
    const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
    return port >= 0 && port <= 65535 ? port : fail(ctx, 'expected an integer 0-65535');
  }),
  FLOSTRA_METRICS_MAX_WORKSPACES: integer(DEFAULT_METRICS_MAX_WORKSPACES, 0, 10_000),
  FLOSTRA_METRICS_AUTH: optional.transform((raw, ctx): MetricsAuth => {
    if (raw === undefined) return 'token';
    return METRICS_AUTH_MODES.find((mode) => mode === raw) ?? fail(ctx, `expected one of ${METRICS_AUTH_MODES.join(', ')}`);
  }),
  FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE: integer(DEFAULT_MAX_SCHEDULES_PER_WORKSPACE, 1, 1_000_000),
  FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS: integer(DEFAULT_SCHEDULE_MIN_INTERVAL_SECONDS, 1, 86_400, ' number of seconds'),
  FLOSTRA_RETENTION_DAYS: optional.transform((raw, ctx) => {
    if (raw === undefined || raw === '') return null;
    const days = /^\d{1,6}$/.test(raw) ? Number(raw) : NaN;
    return days >= 1 && days <= 36_500
      ? days
      : fail(ctx, 'expected a whole number of days 1-36500 after which ended executions are deleted (unset: kept forever)');
  }),
  FLOSTRA_LEASE_TTL_MS: integer(DEFAULT_LEASE_TIMINGS.ttlMs, 300, 600_000, ' number of milliseconds'),
  FLOSTRA_LEASE_RENEW_MS: integer(DEFAULT_LEASE_TIMINGS.renewMs, 100, 300_000, ' number of milliseconds'),
  FLOSTRA_LEASE_POLL_MS: integer(DEFAULT_LEASE_TIMINGS.pollMs, 50, 60_000, ' number of milliseconds'),
  FLOSTRA_SHUTDOWN_GRACE_MS: integer(DEFAULT_SHUTDOWN_GRACE_MS, 0, 3_600_000, ' number of milliseconds'),
  FLOSTRA_MAX_EXECUTIONS_PER_TREE: integer(DEFAULT_MAX_EXECUTIONS_PER_TREE, 1, 100_000),
  FLOSTRA_EXECUTION_MAX_KEPT_SIGNALS: integer(DEFAULT_EXECUTION_LIMITS.maxKeptSignals, 1, 1_000_000),
  FLOSTRA_EXECUTION_MAX_KEPT_SIGNAL_BYTES: integer(DEFAULT_EXECUTION_LIMITS.maxKeptSignalBytes, 1, 1_000_000_000, ' number of bytes'),
  FLOSTRA_TASK_PROGRESS_KEPT: integer(DEFAULT_EXECUTION_LIMITS.taskProgressKept, 1, 1_000),
  FLOSTRA_TASK_PROGRESS_MAX_BYTES: integer(DEFAULT_EXECUTION_LIMITS.maxTaskProgressBytes, 1, 1_000_000_000, ' number of bytes'),
  FLOSTRA_EXECUTION_MAX_HISTORY_BYTES: integer(DEFAULT_EXECUTION_LIMITS.maxHistoryBytes, 65_536, 4_000_000_000, ' number of bytes'),
  FLOSTRA_EXECUTION_VIEW_VALUE_MAX_BYTES: integer(DEFAULT_VIEW_VALUE_MAX_BYTES, 0, 1_000_000_000, ' number of bytes'),
  FLOSTRA_HISTORY_PAGE_MAX_BYTES: integer(DEFAULT_HISTORY_PAGE_MAX_BYTES, 1, 1_000_000_000, ' number of bytes'),
  FLOSTRA_KAFKA_SESSION_TIMEOUT_MS: integer(30_000, 6_000, 1_800_000, ' number of milliseconds'),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional.transform((raw, ctx) => {
    if (raw === undefined) return null;
    const scheme = urlScheme(raw);
    return scheme === 'http:' || scheme === 'https:' ? raw : fail(ctx, 'expected an http:// or https:// URL of an OTLP/HTTP collector');
  }),
  LOG_LEVEL: optional.transform((raw, ctx) => {
    if (raw === undefined) return 'info';
    const level = raw.toLowerCase();
    return (LOG_THRESHOLDS as readonly string[]).includes(level)
      ? (level as LogThreshold)
      : fail(ctx, `expected one of ${LOG_THRESHOLDS.join(', ')}`);
  }),
});

type Env = z.output<typeof envSchema>;

function toConfig(env: Env) {
  return {
    host: env.HOST,
    port: env.PORT,
    /** Absolute path: embedded PGlite data and dev tokens live here. */
    dataDir: env.FLOSTRA_DATA_DIR,
    roles: env.FLOSTRA_ROLES as readonly ProcessRole[],
    /** `pglite` is the embedded store under `dataDir`. */
    eventStore: env.EVENT_STORE_URL,
    /** null: read models live in the embedded PGlite. */
    databaseUrl: env.DATABASE_URL,
    /** Where the embedded PGlite runs: `main`, the process's main thread; `own`, a worker thread of its own. */
    pgliteThread: env.FLOSTRA_PGLITE_THREAD,
    /** null: the in-process bus. */
    kafkaBrokers: env.KAFKA_BROKERS as readonly string[] | null,
    /** How long a Kafka consumer may go without a heartbeat before its group gives its partitions to others. */
    kafkaSessionTimeoutMs: env.FLOSTRA_KAFKA_SESSION_TIMEOUT_MS,
    /** Absolute path, or null: dev tokens are generated (embedded mode only). */
    tokensFile: env.FLOSTRA_TOKENS_FILE,
    /** When the tokens file is read again: `watch`, on every change and on SIGHUP; `sighup`, on SIGHUP only. */
    tokensReload: env.FLOSTRA_TOKENS_RELOAD,
    /** The longest a change to the tokens file waits to be read while changes keep coming. */
    tokensReloadMaxDelayMs: env.FLOSTRA_TOKENS_RELOAD_MAX_DELAY_MS,
    /** Browser sessions this api process holds, all subjects together; one more is refused. */
    sessionsMax: env.FLOSTRA_SESSIONS_MAX,
    /** Browser sessions one subject holds in this process; one more ends the subject's oldest. */
    sessionsPerSubject: env.FLOSTRA_SESSIONS_PER_SUBJECT,
    /** Sign-ins per minute from one client address. */
    signInPerMinutePerAddress: env.FLOSTRA_SIGN_IN_PER_MINUTE_PER_ADDRESS,
    /** Sign-ins per minute with one token. */
    signInPerMinutePerToken: env.FLOSTRA_SIGN_IN_PER_MINUTE_PER_TOKEN,
    maxBodyBytes: env.FLOSTRA_MAX_BODY_BYTES,
    /** Where a worker reaches the api; null: this process's own listener. */
    apiUrl: env.FLOSTRA_API_URL,
    /** Bearer token of the worker role; null: the dev worker token (embedded mode without a tokens file only). */
    workerToken: env.FLOSTRA_WORKER_TOKEN,
    /** How the worker role reaches the api: `auto` is in process when it shares the api's process (see `workerTransportOf`). */
    workerTransport: env.FLOSTRA_WORKER_TRANSPORT,
    /** Where the worker role's results go: `auto` is to this process's ingestor when it has one and claims in process (see `workerResultsOf`). */
    workerResults: env.FLOSTRA_WORKER_RESULTS,
    /** Whether this process's dispatcher hands dispatches to its worker in memory: `auto` is when both roles run here (see `workerDispatchOf`). */
    workerDispatch: env.FLOSTRA_WORKER_DISPATCH,
    /** Attempts one worker process runs at once. */
    workerConcurrency: env.FLOSTRA_WORKER_CONCURRENCY,
    /** How long a projector holds a short batch back for more while appends stream in; 0: never. */
    projectorGatherMs: env.FLOSTRA_PROJECTOR_GATHER_MS,
    /** CIDRs (`10.0.0.0/8`) and host names (`.example.com` for subdomains) http nodes may reach beyond the public internet. */
    egressAllow: env.FLOSTRA_EGRESS_ALLOW as readonly string[],
    /** The key secrets are encrypted with; null: none configured (embedded mode then uses `secretsKeyFile`). */
    secretsKey: env.FLOSTRA_SECRETS_KEY,
    /** Keys secrets may still be encrypted with, readable until they are re-encrypted under `secretsKey`. */
    secretsPreviousKeys: env.FLOSTRA_SECRETS_PREVIOUS_KEYS as readonly SecretKeyBytes[],
    /** Where `secretsKey` was read from when it came from the embedded key file (set by the bootstrap), else null. */
    secretsKeyFile: null as string | null,
    /** Node's `headersTimeout`: the request line and headers must arrive within it. */
    httpHeadersTimeoutMs: env.FLOSTRA_HTTP_HEADERS_TIMEOUT_MS,
    /** A request body must arrive within it once reading began, else 408 and the connection is closed. */
    httpBodyTimeoutMs: env.FLOSTRA_HTTP_BODY_TIMEOUT_MS,
    /** Node's `requestTimeout`: the whole request (not the response: SSE streams stay open). */
    httpRequestTimeoutMs: env.FLOSTRA_HTTP_REQUEST_TIMEOUT_MS,
    /** Requests of one token handled at once while another token is active; more wait their turn (src/http/request-gate.ts). */
    httpMaxInFlightPerToken: env.FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN,
    /** Requests of one token waiting beyond those; one more is 429 too_many_requests. */
    httpMaxQueuedPerToken: env.FLOSTRA_HTTP_MAX_QUEUED_PER_TOKEN,
    /** How long a token counts as active after its last request arrived. */
    httpContentionWindowMs: env.FLOSTRA_HTTP_CONTENTION_WINDOW_MS,
    /** Open SSE streams one token may hold in this process. */
    sseMaxStreamsPerToken: env.FLOSTRA_SSE_MAX_STREAMS_PER_TOKEN,
    /** Open SSE streams this process serves at once. */
    sseMaxStreams: env.FLOSTRA_SSE_MAX_STREAMS,
    /** Wall-clock limit of one transform evaluation. */
    transformTimeoutMs: env.FLOSTRA_TRANSFORM_TIMEOUT_MS,
    /** Heap of each transform evaluator process. */
    transformMemoryMb: env.FLOSTRA_TRANSFORM_MEMORY_MB,
    /** Transform evaluator processes of one worker (evaluations running at once). */
    transformProcesses: env.FLOSTRA_TRANSFORM_PROCESSES,
    /** Interpreter threads of a worker's code sandbox. */
    codeThreads: env.FLOSTRA_CODE_THREADS,
    /** Interpreter time a workspace may use per `codeCpuWindowMs` before its code yields to other workspaces'. */
    codeCpuBudgetMs: env.FLOSTRA_CODE_CPU_BUDGET_MS,
    codeCpuWindowMs: env.FLOSTRA_CODE_CPU_WINDOW_MS,
    /** How long the api may take to check the code sources of one publish. */
    codeCheckTimeoutMs: env.FLOSTRA_CODE_CHECK_TIMEOUT_MS,
    /** Where GET /metrics is served on its own (on HOST); null: on the HTTP server of PORT. */
    metricsPort: env.FLOSTRA_METRICS_PORT,
    /** Distinct workspaces with series of their own; later ones are counted as `_other`. */
    metricsMaxWorkspaces: env.FLOSTRA_METRICS_MAX_WORKSPACES,
    /** `token`: GET /metrics on PORT needs a token with the global `metrics` or `system-admin` role; `none`: it is public. */
    metricsAuth: env.FLOSTRA_METRICS_AUTH,
    /** Schedules one workspace may hold; a new one beyond them is 409 `limit_reached`. */
    maxSchedulesPerWorkspace: env.FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE,
    /** The least time between two fire times of a schedule; a cron whose fire times come closer is 400. */
    scheduleMinIntervalSeconds: env.FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS,
    /** Days after its end an execution is deleted from the event store and the read models; null: never. */
    retentionDays: env.FLOSTRA_RETENTION_DAYS,
    /** Spans are exported over OTLP/HTTP there; null: tracing is off (no SDK is loaded). */
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
    logLevel: env.LOG_LEVEL,
    /** Leases of the single-writer roles (docs/operations.md, "Leases and failover"). */
    leases: { ttlMs: env.FLOSTRA_LEASE_TTL_MS, renewMs: env.FLOSTRA_LEASE_RENEW_MS, pollMs: env.FLOSTRA_LEASE_POLL_MS },
    /** How long SIGTERM waits for running attempts and batches before the process exits anyway. */
    shutdownGraceMs: env.FLOSTRA_SHUTDOWN_GRACE_MS,
    /** Executions one sub-workflow tree may hold (its root included) in a workspace that sets no `maxExecutionsPerTree`. */
    maxExecutionsPerTree: env.FLOSTRA_MAX_EXECUTIONS_PER_TREE,
    /** What one execution may hold (docs/operations.md, "Tenant isolation bounds"); see `executionLimitsOf`. */
    executionMaxKeptSignals: env.FLOSTRA_EXECUTION_MAX_KEPT_SIGNALS,
    executionMaxKeptSignalBytes: env.FLOSTRA_EXECUTION_MAX_KEPT_SIGNAL_BYTES,
    taskProgressKept: env.FLOSTRA_TASK_PROGRESS_KEPT,
    taskProgressMaxBytes: env.FLOSTRA_TASK_PROGRESS_MAX_BYTES,
    executionMaxHistoryBytes: env.FLOSTRA_EXECUTION_MAX_HISTORY_BYTES,
    /** A value of an execution's view (an input, output, progress or payload) larger than this is summarized there. */
    executionViewValueMaxBytes: env.FLOSTRA_EXECUTION_VIEW_VALUE_MAX_BYTES,
    /** A page of an execution's history holds no more events once their data pass this (the first always). */
    historyPageMaxBytes: env.FLOSTRA_HISTORY_PAGE_MAX_BYTES,
  };
}

/** The bounds the execution decider holds each execution to. */
export function executionLimitsOf(config: AppConfig): ExecutionLimits {
  return {
    maxKeptSignals: config.executionMaxKeptSignals,
    maxKeptSignalBytes: config.executionMaxKeptSignalBytes,
    taskProgressKept: config.taskProgressKept,
    maxTaskProgressBytes: config.taskProgressMaxBytes,
    maxHistoryBytes: config.executionMaxHistoryBytes,
  };
}

/** The limits of transform evaluation a worker of this process gets (createWorker's `transform`). */
export function transformLimits(config: AppConfig): { timeoutMs: number; memoryMb: number; processes: number } {
  return { timeoutMs: config.transformTimeoutMs, memoryMb: config.transformMemoryMb, processes: config.transformProcesses };
}

/** How a worker of this process shares its code sandbox's threads (createWorker's `code`). */
export function codeShare(config: AppConfig): { threads: number; cpuBudgetMs: number; cpuWindowMs: number } {
  return { threads: config.codeThreads, cpuBudgetMs: config.codeCpuBudgetMs, cpuWindowMs: config.codeCpuWindowMs };
}

/** Validated configuration of one process; build it only with `loadConfig`. */
export type AppConfig = Readonly<ReturnType<typeof toConfig>>;
export type EventStoreConfig = AppConfig['eventStore'];

/** Injection token for the AppConfig of the running process. */
export const APP_CONFIG = Symbol('AppConfig');

// Values of these may carry credentials: an error message never echoes them.
const SECRET_VARIABLES = new Set([
  'EVENT_STORE_URL',
  'DATABASE_URL',
  'FLOSTRA_WORKER_TOKEN',
  'FLOSTRA_SECRETS_KEY',
  'FLOSTRA_SECRETS_PREVIOUS_KEYS',
]);

/**
 * The one loader of the environment. Blank values count as unset. Throws a ConfigError whose
 * message names each invalid variable and what it expected.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const raw: Record<string, string | undefined> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    raw[key] = value === undefined || value.trim() === '' ? undefined : value.trim();
  }
  const parsed = envSchema
    .superRefine((env, ctx) => {
      // A subject's sessions alone must never fill the process: they end each other first.
      if (env.FLOSTRA_SESSIONS_PER_SUBJECT > env.FLOSTRA_SESSIONS_MAX) {
        ctx.addIssue({
          code: 'custom',
          path: ['FLOSTRA_SESSIONS_PER_SUBJECT'],
          message: `expected at most FLOSTRA_SESSIONS_MAX (${env.FLOSTRA_SESSIONS_MAX})`,
        });
      }
      // The whole request holds its headers and its body: neither limit may exceed it.
      for (const part of ['FLOSTRA_HTTP_HEADERS_TIMEOUT_MS', 'FLOSTRA_HTTP_BODY_TIMEOUT_MS'] as const) {
        if (env[part] > env.FLOSTRA_HTTP_REQUEST_TIMEOUT_MS) {
          ctx.addIssue({
            code: 'custom',
            path: [part],
            message: `expected at most FLOSTRA_HTTP_REQUEST_TIMEOUT_MS (${env.FLOSTRA_HTTP_REQUEST_TIMEOUT_MS})`,
          });
        }
      }
      // The worker's calls go to this process's handlers: they must be here.
      if (env.FLOSTRA_WORKER_TRANSPORT === 'in-process' && !(env.FLOSTRA_ROLES as readonly string[]).includes('api')) {
        ctx.addIssue({ code: 'custom', path: ['FLOSTRA_WORKER_TRANSPORT'], message: 'in-process needs the api role in FLOSTRA_ROLES' });
      }
      // The worker's results go to this process's ingestor: it must be here.
      if (env.FLOSTRA_WORKER_RESULTS === 'in-process' && !(env.FLOSTRA_ROLES as readonly string[]).includes('ingestor')) {
        ctx.addIssue({ code: 'custom', path: ['FLOSTRA_WORKER_RESULTS'], message: 'in-process needs the ingestor role in FLOSTRA_ROLES' });
      }
      // Dispatches are handed over by this process's dispatcher: it must be here.
      if (env.FLOSTRA_WORKER_DISPATCH === 'in-process' && !(env.FLOSTRA_ROLES as readonly string[]).includes('dispatcher')) {
        ctx.addIssue({
          code: 'custom',
          path: ['FLOSTRA_WORKER_DISPATCH'],
          message: 'in-process needs the dispatcher role in FLOSTRA_ROLES',
        });
      }
      // A holder must get at least one renewal in before its lease runs out.
      if (env.FLOSTRA_LEASE_RENEW_MS * 2 > env.FLOSTRA_LEASE_TTL_MS) {
        ctx.addIssue({
          code: 'custom',
          path: ['FLOSTRA_LEASE_RENEW_MS'],
          message: `expected at most half of FLOSTRA_LEASE_TTL_MS (${env.FLOSTRA_LEASE_TTL_MS})`,
        });
      }
    })
    .safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0]);
      const shown = SECRET_VARIABLES.has(variable) ? 'a value not shown here' : JSON.stringify(raw[variable]);
      return { variable, text: `${variable}: ${issue.message}, got ${shown}` };
    });
    throw new ConfigError(
      problems.map((p) => p.text).join('; '),
      problems.map((p) => p.variable),
    );
  }
  return Object.freeze(toConfig(parsed.data));
}

/** True when this process runs `role` (FLOSTRA_ROLES). */
export function runsRole(config: AppConfig, role: ProcessRole): boolean {
  return config.roles.includes(role);
}

/**
 * How this process's worker role reaches the control plane: `in-process` calls the api's
 * handlers directly (same token check, same commands, no HTTP); `http` goes over the network.
 * `auto` is in process when this process runs the api and FLOSTRA_API_URL does not send the
 * worker elsewhere.
 */
export function workerTransportOf(config: AppConfig): 'in-process' | 'http' {
  if (config.workerTransport !== 'auto') return config.workerTransport;
  return runsRole(config, 'api') && config.apiUrl === null ? 'in-process' : 'http';
}

/**
 * Where this process's worker role sends its results: `in-process` hands them to the ingestor of
 * this process (same parsing, dedupe, fencing and dead letters as for the bus, one append per
 * execution, no broker in between); `bus` publishes them to `flostra.results.v1`. `auto` is in
 * process when this process runs the ingestor and its worker already claims in process
 * (`workerTransportOf`).
 */
export function workerResultsOf(config: AppConfig): 'in-process' | 'bus' {
  if (config.workerResults !== 'auto') return config.workerResults;
  return workerTransportOf(config) === 'in-process' && runsRole(config, 'ingestor') ? 'in-process' : 'bus';
}

/**
 * Whether the dispatcher of this process hands dispatches to this process's worker role in
 * memory (`in-process`: while the worker has room, the rest on the bus for any worker) or sends
 * every dispatch on the bus (`bus`). `auto` is in process when this process runs both roles.
 * Only the process holding the dispatcher's lease hands over; the others' workers take from
 * the bus.
 */
export function workerDispatchOf(config: AppConfig): 'in-process' | 'bus' {
  if (config.workerDispatch !== 'auto') return config.workerDispatch;
  return runsRole(config, 'dispatcher') && runsRole(config, 'worker') ? 'in-process' : 'bus';
}

/**
 * Everything on PGlite inside FLOSTRA_DATA_DIR: the only mode in which dev tokens may be
 * generated instead of read from FLOSTRA_TOKENS_FILE.
 */
export function isEmbedded(config: AppConfig): boolean {
  return config.eventStore.kind === 'pglite' && config.databaseUrl === null;
}
