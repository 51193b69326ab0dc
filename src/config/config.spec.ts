import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { inspect } from 'node:util';
import {
  ConfigError,
  DEFAULT_MAX_BODY_BYTES,
  executionLimitsOf,
  isEmbedded,
  loadConfig,
  PROCESS_ROLES,
  workerResultsOf,
  workerDispatchOf,
  workerTransportOf,
} from './config.js';

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  describe('with an empty environment', () => {
    const config = loadConfig({});

    it('listens on loopback port 3000', () => {
      expect(config.host).toBe('127.0.0.1');
      expect(config.port).toBe(3000);
    });

    it('runs every role, embedded, on ./.flostra', () => {
      expect(config.roles).toEqual([...PROCESS_ROLES]);
      expect(config.eventStore).toEqual({ kind: 'pglite' });
      expect(config.databaseUrl).toBeNull();
      expect(config.pgliteThread).toBe('own');
      expect(config.kafkaBrokers).toBeNull();
      expect(config.tokensFile).toBeNull();
      expect(config.tokensReload).toBe('watch');
      expect(config.dataDir).toBe(resolve('./.flostra'));
      expect(isEmbedded(config)).toBe(true);
    });

    it('limits bodies to 1 MiB and logs at info', () => {
      expect(config.maxBodyBytes).toBe(DEFAULT_MAX_BODY_BYTES);
      expect(config.maxBodyBytes).toBe(1048576);
      expect(config.logLevel).toBe('info');
    });

    it('keeps ended executions forever', () => {
      expect(config.retentionDays).toBeNull();
    });

    it('gives a silent Kafka consumer 30 s before its group moves its partitions', () => {
      expect(config.kafkaSessionTimeoutMs).toBe(30_000);
    });

    it('lets a projector hold a short batch back 50 ms while appends stream in', () => {
      expect(config.projectorGatherMs).toBe(50);
    });

    it('limits slow requests, the live streams of one token and of the process, and transforms', () => {
      expect(config).toMatchObject({
        httpHeadersTimeoutMs: 20_000,
        httpBodyTimeoutMs: 30_000,
        httpRequestTimeoutMs: 60_000,
        sseMaxStreamsPerToken: 50,
        sseMaxStreams: 5_000,
        httpMaxInFlightPerToken: 4,
        httpMaxQueuedPerToken: 1_000,
        httpContentionWindowMs: 1_000,
        tokensReloadMaxDelayMs: 500,
        sessionsMax: 10_000,
        sessionsPerSubject: 20,
        signInPerMinutePerAddress: 20,
        signInPerMinutePerToken: 10,
        transformTimeoutMs: 1_000,
        transformMemoryMb: 64,
        transformProcesses: 2,
      });
    });

    it('shares two code threads per worker, 30 s of interpreter time per workspace a minute, and checks a publish’s code within 2 s', () => {
      expect(config).toMatchObject({ codeThreads: 2, codeCpuBudgetMs: 30_000, codeCpuWindowMs: 60_000, codeCheckTimeoutMs: 2_000 });
    });

    it('is frozen', () => {
      expect(Object.isFrozen(config)).toBe(true);
    });
  });

  it('treats blank variables as unset', () => {
    expect(loadConfig({ PORT: '  ', FLOSTRA_ROLES: '' }).port).toBe(3000);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: '0',
      FLOSTRA_DATA_DIR: '/tmp/flostra-x',
      FLOSTRA_ROLES: 'worker, api,api',
      EVENT_STORE_URL: 'esdb://localhost:2113?tls=false',
      DATABASE_URL: 'postgresql://u:p@localhost/flostra',
      KAFKA_BROKERS: 'localhost:9092, [::1]:9093',
      FLOSTRA_TOKENS_FILE: '/etc/flostra/tokens.json',
      FLOSTRA_TOKENS_RELOAD: 'SIGHUP',
      FLOSTRA_TOKENS_RELOAD_MAX_DELAY_MS: '250',
      FLOSTRA_SESSIONS_MAX: '100',
      FLOSTRA_SESSIONS_PER_SUBJECT: '5',
      FLOSTRA_SIGN_IN_PER_MINUTE_PER_ADDRESS: '7',
      FLOSTRA_SIGN_IN_PER_MINUTE_PER_TOKEN: '3',
      FLOSTRA_MAX_BODY_BYTES: '2048',
      FLOSTRA_API_URL: 'http://api:3000/',
      FLOSTRA_WORKER_TOKEN: 'secret-worker-token',
      FLOSTRA_WORKER_TRANSPORT: 'HTTP',
      FLOSTRA_WORKER_RESULTS: 'Bus',
      FLOSTRA_WORKER_DISPATCH: 'Bus',
      FLOSTRA_PGLITE_THREAD: 'Main',
      FLOSTRA_WORKER_CONCURRENCY: '16',
      FLOSTRA_EGRESS_ALLOW: '10.1.0.0/16, .corp.example',
      FLOSTRA_PROJECTOR_GATHER_MS: '0',
      FLOSTRA_SECRETS_KEY: 'ab'.repeat(32),
      FLOSTRA_SECRETS_PREVIOUS_KEYS: 'cd'.repeat(32),
      FLOSTRA_HTTP_HEADERS_TIMEOUT_MS: '5000',
      FLOSTRA_HTTP_BODY_TIMEOUT_MS: '10000',
      FLOSTRA_HTTP_REQUEST_TIMEOUT_MS: '15000',
      FLOSTRA_SSE_MAX_STREAMS_PER_TOKEN: '3',
      FLOSTRA_SSE_MAX_STREAMS: '300',
      FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN: '6',
      FLOSTRA_HTTP_MAX_QUEUED_PER_TOKEN: '0',
      FLOSTRA_HTTP_CONTENTION_WINDOW_MS: '250',
      FLOSTRA_TRANSFORM_TIMEOUT_MS: '250',
      FLOSTRA_TRANSFORM_MEMORY_MB: '128',
      FLOSTRA_TRANSFORM_PROCESSES: '4',
      FLOSTRA_CODE_THREADS: '1',
      FLOSTRA_CODE_CPU_BUDGET_MS: '5000',
      FLOSTRA_CODE_CPU_WINDOW_MS: '20000',
      FLOSTRA_CODE_CHECK_TIMEOUT_MS: '500',
      FLOSTRA_METRICS_PORT: '9464',
      FLOSTRA_METRICS_MAX_WORKSPACES: '20',
      FLOSTRA_METRICS_AUTH: 'token',
      FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE: '7',
      FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS: '300',
      FLOSTRA_RETENTION_DAYS: '30',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      LOG_LEVEL: 'DEBUG',
      FLOSTRA_LEASE_TTL_MS: '6000',
      FLOSTRA_LEASE_RENEW_MS: '2000',
      FLOSTRA_LEASE_POLL_MS: '250',
      FLOSTRA_SHUTDOWN_GRACE_MS: '5000',
      FLOSTRA_MAX_EXECUTIONS_PER_TREE: '250',
      FLOSTRA_KAFKA_SESSION_TIMEOUT_MS: '10000',
      FLOSTRA_EXECUTION_MAX_KEPT_SIGNALS: '7',
      FLOSTRA_EXECUTION_MAX_KEPT_SIGNAL_BYTES: '70000',
      FLOSTRA_TASK_PROGRESS_KEPT: '2',
      FLOSTRA_TASK_PROGRESS_MAX_BYTES: '512',
      FLOSTRA_EXECUTION_MAX_HISTORY_BYTES: '1000000',
      FLOSTRA_EXECUTION_VIEW_VALUE_MAX_BYTES: '4096',
      FLOSTRA_HISTORY_PAGE_MAX_BYTES: '65536',
    });
    expect(config.secretsKey?.bytes).toEqual(Buffer.alloc(32, 0xab));
    expect(config.secretsPreviousKeys.map((key) => key.bytes)).toEqual([Buffer.alloc(32, 0xcd)]);
    expect(config).toEqual({
      host: '0.0.0.0',
      port: 0,
      dataDir: '/tmp/flostra-x',
      roles: ['api', 'worker'],
      eventStore: { kind: 'kurrentdb', url: 'esdb://localhost:2113?tls=false' },
      databaseUrl: 'postgresql://u:p@localhost/flostra',
      pgliteThread: 'main',
      kafkaBrokers: ['localhost:9092', '[::1]:9093'],
      kafkaSessionTimeoutMs: 10_000,
      tokensFile: '/etc/flostra/tokens.json',
      tokensReload: 'sighup',
      tokensReloadMaxDelayMs: 250,
      sessionsMax: 100,
      sessionsPerSubject: 5,
      signInPerMinutePerAddress: 7,
      signInPerMinutePerToken: 3,
      maxBodyBytes: 2048,
      maxExecutionsPerTree: 250,
      apiUrl: 'http://api:3000',
      workerToken: 'secret-worker-token',
      workerTransport: 'http',
      workerResults: 'bus',
      workerDispatch: 'bus',
      workerConcurrency: 16,
      projectorGatherMs: 0,
      egressAllow: ['10.1.0.0/16', '.corp.example'],
      secretsKey: expect.anything(),
      secretsPreviousKeys: [expect.anything()],
      secretsKeyFile: null,
      httpHeadersTimeoutMs: 5000,
      httpBodyTimeoutMs: 10000,
      httpRequestTimeoutMs: 15000,
      sseMaxStreamsPerToken: 3,
      sseMaxStreams: 300,
      httpMaxInFlightPerToken: 6,
      httpMaxQueuedPerToken: 0,
      httpContentionWindowMs: 250,
      transformTimeoutMs: 250,
      transformMemoryMb: 128,
      transformProcesses: 4,
      codeThreads: 1,
      codeCpuBudgetMs: 5000,
      codeCpuWindowMs: 20000,
      codeCheckTimeoutMs: 500,
      metricsPort: 9464,
      metricsMaxWorkspaces: 20,
      metricsAuth: 'token',
      maxSchedulesPerWorkspace: 7,
      scheduleMinIntervalSeconds: 300,
      retentionDays: 30,
      otlpEndpoint: 'http://127.0.0.1:4318',
      logLevel: 'debug',
      leases: { ttlMs: 6_000, renewMs: 2_000, pollMs: 250 },
      shutdownGraceMs: 5_000,
      executionMaxKeptSignals: 7,
      executionMaxKeptSignalBytes: 70_000,
      taskProgressKept: 2,
      taskProgressMaxBytes: 512,
      executionMaxHistoryBytes: 1_000_000,
      executionViewValueMaxBytes: 4096,
      historyPageMaxBytes: 65_536,
    });
    expect(executionLimitsOf(config)).toEqual({
      maxKeptSignals: 7,
      maxKeptSignalBytes: 70_000,
      taskProgressKept: 2,
      maxTaskProgressBytes: 512,
      maxHistoryBytes: 1_000_000,
    });
    expect(isEmbedded(config)).toBe(false);
  });

  it('refuses more sessions per subject than in all', () => {
    expect(() => loadConfig({ FLOSTRA_SESSIONS_MAX: '10', FLOSTRA_SESSIONS_PER_SUBJECT: '11' })).toThrow(
      'FLOSTRA_SESSIONS_PER_SUBJECT: expected at most FLOSTRA_SESSIONS_MAX (10)',
    );
  });

  it('refuses a lease renewal interval above half the TTL', () => {
    expect(() => loadConfig({ FLOSTRA_LEASE_TTL_MS: '3000', FLOSTRA_LEASE_RENEW_MS: '2000' })).toThrow(
      'FLOSTRA_LEASE_RENEW_MS: expected at most half of FLOSTRA_LEASE_TTL_MS (3000), got "2000"',
    );
  });

  it.each([
    ['postgres://localhost/es', 'postgres'],
    ['postgresql://localhost/es', 'postgres'],
    ['kurrentdb://localhost:2113', 'kurrentdb'],
  ])('picks the event store from the scheme of %s', (url, kind) => {
    expect(loadConfig({ EVENT_STORE_URL: url }).eventStore).toEqual({ kind, url });
  });

  it.each([
    [{}, 'in-process'],
    [{ FLOSTRA_API_URL: 'http://api:3000' }, 'http'],
    [{ FLOSTRA_ROLES: 'worker,dispatcher' }, 'http'],
    [{ FLOSTRA_WORKER_TRANSPORT: 'http' }, 'http'],
    [{ FLOSTRA_WORKER_TRANSPORT: 'IN-PROCESS', FLOSTRA_API_URL: 'http://api:3000' }, 'in-process'],
  ])('a worker with %j reaches the api %s', (env, transport) => {
    expect(workerTransportOf(loadConfig(env))).toBe(transport);
  });

  it.each([
    [{}, 'in-process'],
    [{ FLOSTRA_WORKER_TRANSPORT: 'http' }, 'bus'],
    [{ FLOSTRA_API_URL: 'http://api:3000' }, 'bus'],
    [{ FLOSTRA_ROLES: 'api,dispatcher,worker' }, 'bus'],
    [{ FLOSTRA_WORKER_RESULTS: 'bus' }, 'bus'],
    [{ FLOSTRA_WORKER_RESULTS: 'IN-PROCESS', FLOSTRA_WORKER_TRANSPORT: 'http' }, 'in-process'],
  ])('a worker with %j sends its results %s', (env, results) => {
    expect(workerResultsOf(loadConfig(env))).toBe(results);
  });

  it.each([
    [{}, 'in-process'],
    [{ FLOSTRA_ROLES: 'api,dispatcher,worker' }, 'in-process'],
    [{ FLOSTRA_ROLES: 'api,ingestor,worker' }, 'bus'],
    [{ FLOSTRA_ROLES: 'dispatcher' }, 'bus'],
    [{ FLOSTRA_WORKER_DISPATCH: 'BUS' }, 'bus'],
  ])('a dispatcher and worker with %j meet %s', (env, dispatch) => {
    expect(workerDispatchOf(loadConfig(env))).toBe(dispatch);
  });

  describe('names the variable at fault', () => {
    it.each([
      ['PORT', 'abc', 'PORT: expected an integer 0-65535, got "abc"'],
      ['PORT', '65536', 'PORT: expected an integer 0-65535, got "65536"'],
      ['PORT', '-1', 'PORT: expected an integer 0-65535, got "-1"'],
      ['HOST', 'local host', 'HOST: expected a host name or address, got "local host"'],
      [
        'FLOSTRA_ROLES',
        'api,cron',
        'FLOSTRA_ROLES: expected a comma-separated list of api, dispatcher, ingestor, projector, scheduler, timer, watchdog, worker, got "api,cron"',
      ],
      ['FLOSTRA_ROLES', ',', 'FLOSTRA_ROLES: expected a comma-separated list'],
      ['EVENT_STORE_URL', 'mysql://db/x', 'EVENT_STORE_URL: expected a postgres://, postgresql://, esdb:// or kurrentdb:// URL'],
      ['DATABASE_URL', 'esdb://localhost', 'DATABASE_URL: expected a postgres:// or postgresql:// URL'],
      ['KAFKA_BROKERS', 'localhost', 'KAFKA_BROKERS: expected a comma-separated list of host:port, got "localhost"'],
      ['KAFKA_BROKERS', 'a:1,b:0', 'KAFKA_BROKERS: expected a comma-separated list of host:port'],
      ['FLOSTRA_MAX_BODY_BYTES', '1mb', 'FLOSTRA_MAX_BODY_BYTES: expected a positive integer number of bytes, got "1mb"'],
      ['FLOSTRA_MAX_BODY_BYTES', '0', 'FLOSTRA_MAX_BODY_BYTES: expected a positive integer number of bytes'],
      ['FLOSTRA_TOKENS_RELOAD', 'never', 'FLOSTRA_TOKENS_RELOAD: expected watch or sighup, got "never"'],
      ['LOG_LEVEL', 'loud', 'LOG_LEVEL: expected one of debug, info, warn, error, silent, got "loud"'],
      ['FLOSTRA_API_URL', 'ftp://api', 'FLOSTRA_API_URL: expected an http:// or https:// URL of the api, got "ftp://api"'],
      ['FLOSTRA_WORKER_CONCURRENCY', '0', 'FLOSTRA_WORKER_CONCURRENCY: expected an integer 1-1000, got "0"'],
      ['FLOSTRA_WORKER_TRANSPORT', 'grpc', 'FLOSTRA_WORKER_TRANSPORT: expected one of auto, in-process, http, got "grpc"'],
      ['FLOSTRA_WORKER_RESULTS', 'kafka', 'FLOSTRA_WORKER_RESULTS: expected one of auto, in-process, bus, got "kafka"'],
      ['FLOSTRA_WORKER_DISPATCH', 'memory', 'FLOSTRA_WORKER_DISPATCH: expected one of auto, in-process, bus, got "memory"'],
      ['FLOSTRA_PGLITE_THREAD', 'worker', 'FLOSTRA_PGLITE_THREAD: expected one of own, main, got "worker"'],
      ['FLOSTRA_METRICS_PORT', '70000', 'FLOSTRA_METRICS_PORT: expected an integer 0-65535, got "70000"'],
      ['FLOSTRA_METRICS_MAX_WORKSPACES', '10001', 'FLOSTRA_METRICS_MAX_WORKSPACES: expected an integer 0-10000, got "10001"'],
      [
        'FLOSTRA_RETENTION_DAYS',
        '0',
        'FLOSTRA_RETENTION_DAYS: expected a whole number of days 1-36500 after which ended executions are deleted (unset: kept forever), got "0"',
      ],
      [
        'FLOSTRA_RETENTION_DAYS',
        '7.5',
        'FLOSTRA_RETENTION_DAYS: expected a whole number of days 1-36500 after which ended executions are deleted (unset: kept forever), got "7.5"',
      ],
      [
        'OTEL_EXPORTER_OTLP_ENDPOINT',
        'grpc://collector:4317',
        'OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:// or https:// URL of an OTLP/HTTP collector, got "grpc://collector:4317"',
      ],
      [
        'FLOSTRA_PROJECTOR_GATHER_MS',
        '10001',
        'FLOSTRA_PROJECTOR_GATHER_MS: expected an integer number of milliseconds 0-10000, got "10001"',
      ],
      ['FLOSTRA_PROJECTOR_GATHER_MS', '2.5', 'FLOSTRA_PROJECTOR_GATHER_MS: expected an integer number of milliseconds 0-10000, got "2.5"'],
      [
        'FLOSTRA_HTTP_BODY_TIMEOUT_MS',
        '50',
        'FLOSTRA_HTTP_BODY_TIMEOUT_MS: expected an integer number of milliseconds 100-3600000, got "50"',
      ],
      [
        'FLOSTRA_HTTP_HEADERS_TIMEOUT_MS',
        '90000',
        'FLOSTRA_HTTP_HEADERS_TIMEOUT_MS: expected at most FLOSTRA_HTTP_REQUEST_TIMEOUT_MS (60000), got "90000"',
      ],
      ['FLOSTRA_SSE_MAX_STREAMS_PER_TOKEN', '0', 'FLOSTRA_SSE_MAX_STREAMS_PER_TOKEN: expected an integer 1-1000000, got "0"'],
      [
        'FLOSTRA_TRANSFORM_TIMEOUT_MS',
        '1s',
        'FLOSTRA_TRANSFORM_TIMEOUT_MS: expected an integer number of milliseconds 10-600000, got "1s"',
      ],
      ['FLOSTRA_TRANSFORM_MEMORY_MB', '8', 'FLOSTRA_TRANSFORM_MEMORY_MB: expected an integer number of MB 16-4096, got "8"'],
      ['FLOSTRA_TRANSFORM_PROCESSES', '65', 'FLOSTRA_TRANSFORM_PROCESSES: expected an integer 1-64, got "65"'],
      ['FLOSTRA_CODE_THREADS', '0', 'FLOSTRA_CODE_THREADS: expected an integer 1-64, got "0"'],
      [
        'FLOSTRA_CODE_CPU_WINDOW_MS',
        '999',
        'FLOSTRA_CODE_CPU_WINDOW_MS: expected an integer number of milliseconds 1000-86400000, got "999"',
      ],
      ['FLOSTRA_SSE_MAX_STREAMS', 'many', 'FLOSTRA_SSE_MAX_STREAMS: expected an integer 1-1000000, got "many"'],
      ['FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN', '0', 'FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN: expected an integer 1-100000, got "0"'],
      ['FLOSTRA_METRICS_AUTH', 'basic', 'FLOSTRA_METRICS_AUTH: expected one of none, token, got "basic"'],
      ['FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE', '0', 'FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE: expected an integer 1-1000000, got "0"'],
      [
        'FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS',
        '1m',
        'FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS: expected an integer number of seconds 1-86400, got "1m"',
      ],
      [
        'FLOSTRA_KAFKA_SESSION_TIMEOUT_MS',
        '3000',
        'FLOSTRA_KAFKA_SESSION_TIMEOUT_MS: expected an integer number of milliseconds 6000-1800000, got "3000"',
      ],
    ])('%s=%s', (variable, value, message) => {
      const error = configError({ [variable]: value });
      expect(error.message).toContain(message);
      expect(error.variables).toEqual([variable]);
    });

    it('refuses an in-process worker transport in a process without the api role', () => {
      const error = configError({ FLOSTRA_WORKER_TRANSPORT: 'in-process', FLOSTRA_ROLES: 'worker,dispatcher' });
      expect(error.message).toContain('FLOSTRA_WORKER_TRANSPORT: in-process needs the api role in FLOSTRA_ROLES');
      expect(error.variables).toEqual(['FLOSTRA_WORKER_TRANSPORT']);
    });

    it('refuses dispatches handed over in process without the dispatcher role', () => {
      const error = configError({ FLOSTRA_WORKER_DISPATCH: 'in-process', FLOSTRA_ROLES: 'api,worker' });
      expect(error.message).toContain('FLOSTRA_WORKER_DISPATCH: in-process needs the dispatcher role in FLOSTRA_ROLES');
      expect(error.variables).toEqual(['FLOSTRA_WORKER_DISPATCH']);
    });

    it('refuses in-process worker results in a process without the ingestor role', () => {
      const error = configError({ FLOSTRA_WORKER_RESULTS: 'in-process', FLOSTRA_ROLES: 'api,worker' });
      expect(error.message).toContain('FLOSTRA_WORKER_RESULTS: in-process needs the ingestor role in FLOSTRA_ROLES');
      expect(error.variables).toEqual(['FLOSTRA_WORKER_RESULTS']);
    });

    it('lists every invalid variable at once', () => {
      const error = configError({ PORT: 'x', LOG_LEVEL: 'y' });
      expect(error.variables).toEqual(['PORT', 'LOG_LEVEL']);
    });

    it.each([
      ['too short', randomBytes(16).toString('base64')],
      ['too long', randomBytes(33).toString('hex')],
      ['not base64 or hex', 'correct horse battery staple, correct horse!'],
    ])('refuses a secrets key that is %s, in one line that does not echo it', (_why, key) => {
      const error = configError({ FLOSTRA_SECRETS_KEY: key });
      expect(error.message).toBe(
        'FLOSTRA_SECRETS_KEY: expected 32 bytes written as base64 (44 characters) or hex (64 characters), got a value not shown here',
      );
      expect(error.message).not.toContain(key);
    });

    it('names the previous key that is not one, without echoing any', () => {
      const good = randomBytes(32).toString('hex');
      const error = configError({ FLOSTRA_SECRETS_PREVIOUS_KEYS: `${good}, not-a-key` });
      expect(error.variables).toEqual(['FLOSTRA_SECRETS_PREVIOUS_KEYS']);
      expect(error.message).toContain('entry 2 is not one');
      expect(error.message).not.toContain(good);
    });

    it('never echoes a database URL, which may hold a password', () => {
      const error = configError({ DATABASE_URL: 'mysql://admin:s3cret@db/x' });
      expect(error.message).not.toContain('s3cret');
      expect(error.message).toContain('DATABASE_URL');
    });
  });

  describe('secrets keys', () => {
    const bytes = randomBytes(32);

    it.each([
      ['base64', bytes.toString('base64')],
      ['base64url', bytes.toString('base64url')],
      ['hex', bytes.toString('hex')],
      ['upper-case hex', bytes.toString('hex').toUpperCase()],
    ])('reads a 32-byte key written in %s', (_format, text) => {
      expect(loadConfig({ FLOSTRA_SECRETS_KEY: text }).secretsKey?.bytes).toEqual(bytes);
    });

    it('reads previous keys as a comma list, and none by default', () => {
      const other = randomBytes(32);
      const config = loadConfig({ FLOSTRA_SECRETS_PREVIOUS_KEYS: `${bytes.toString('hex')} , ${other.toString('base64')}` });
      expect(config.secretsPreviousKeys.map((key) => key.bytes)).toEqual([bytes, other]);
      expect(loadConfig({}).secretsKey).toBeNull();
      expect(loadConfig({}).secretsPreviousKeys).toEqual([]);
    });

    it('never shows a key when the configuration is printed or serialized', () => {
      const config = loadConfig({ FLOSTRA_SECRETS_KEY: bytes.toString('hex'), FLOSTRA_SECRETS_PREVIOUS_KEYS: bytes.toString('base64') });
      for (const text of [JSON.stringify(config), inspect(config, { depth: 10, showHidden: true })]) {
        expect(text).not.toContain(bytes.toString('hex'));
        expect(text).not.toContain(bytes.toString('base64'));
        expect(text).toContain('[secret key]');
      }
    });
  });
});
