import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
// Node's own sleep, not test/support/eventually.ts: jest's global setup loads this harness as
// CommonJS by its source path, where a relative `.js` import would not resolve.
import { setTimeout as sleep } from 'node:timers/promises';
import kafkajs from 'kafkajs';

/** Where the broker of this test run listens (`host:port`, comma-separated); set by the integration and e2e global setups. */
export const TEST_KAFKA_BROKERS_ENV = 'FLOSTRA_TEST_KAFKA_BROKERS';

export interface KafkaBroker {
  /** Bootstrap addresses, `127.0.0.1:<port>`. */
  brokers: string[];
  /** Whether this process started the broker (false when reusing FLOSTRA_TEST_KAFKA_BROKERS). */
  owned: boolean;
  /** The broker's own log (owned brokers only), for diagnosing a failed test. */
  logFile?: string;
  /**
   * Stops the broker process and starts it again on the same data dir and ports, then waits
   * until it answers. `hard` kills it (SIGKILL) instead of a clean shutdown; `whileDown` runs
   * between the stop and the start.
   */
  restart(options?: { hard?: boolean; whileDown?: () => Promise<void> }): Promise<void>;
  /** Stops the broker and deletes its data. */
  stop(): Promise<void>;
}

export interface StartKafkaBrokerOptions {
  /** Use FLOSTRA_TEST_KAFKA_BROKERS when set (default true). A test that restarts the broker needs its own. */
  reuseExisting?: boolean;
  /** How long the JVM may take to answer (default 90 s). */
  startTimeoutMs?: number;
  /**
   * Called once the broker's JVM is running (before it answers), so a caller can start other
   * work that blocks the event loop (Postgres' harness) while the broker boots.
   */
  onLaunch?: () => void;
}

const POM = join('test', 'support', 'kafka', 'pom.xml');
const FETCH_SCRIPT = join('.ci', 'fetch-kafka.sh');
const STOP_TIMEOUT_MS = 30_000;
// The broker is a test fixture: C1 only starts it in half the time, and it never runs hot.
const JVM_FLAGS = ['-Xms128m', '-Xmx512m', '-XX:TieredStopAtLevel=1', '-XX:+ExitOnOutOfMemoryError', '-Djava.awt.headless=true'];
const LOG_FLAGS = [
  '-Dorg.slf4j.simpleLogger.defaultLogLevel=info',
  '-Dorg.slf4j.simpleLogger.showDateTime=true',
  '-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS',
];

/**
 * A real single-node Kafka (KRaft: broker and controller in one JVM) for tests, from Apache
 * Kafka's Maven Central jars (fetched once by .ci/fetch-kafka.sh into .cache/, offline after
 * that). Listens and advertises on 127.0.0.1 only, on free ports, with its data in a temp dir.
 * Reuses the broker named by FLOSTRA_TEST_KAFKA_BROKERS when set. Throws when Java or the jars
 * are missing or the broker does not answer in time: a suite that needs Kafka fails, never skips.
 */
export async function startKafkaBroker(options: StartKafkaBrokerOptions = {}): Promise<KafkaBroker> {
  const existing = process.env[TEST_KAFKA_BROKERS_ENV];
  if ((options.reuseExisting ?? true) && existing !== undefined && existing !== '') {
    return {
      brokers: existing.split(',').map((broker) => broker.trim()),
      owned: false,
      restart: async () => {
        throw new Error(`cannot restart the broker named by ${TEST_KAFKA_BROKERS_ENV}: start one with { reuseExisting: false }`);
      },
      stop: async () => undefined,
    };
  }

  const java = findJava();
  const libs = kafkaLibs();
  const startTimeoutMs = options.startTimeoutMs ?? 90_000;
  const root = mkdtempSync(join(tmpdir(), 'flostra-kafka-'));
  const logFile = join(root, 'broker.log');
  const classpath = join(libs, '*');
  let child: ChildProcess | undefined;
  const killNow = () => {
    if (child?.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  // Best effort when the run is interrupted: never leave a broker behind.
  const onExit = () => {
    killNow();
    rmSync(root, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  try {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const [port, controllerPort] = await freePorts(2);
      const config = join(root, `server-${attempt}.properties`);
      const dataDir = join(root, `data-${attempt}`);
      writeFileSync(config, serverProperties({ port, controllerPort, dataDir }));
      await runJava(java, [...JVM_FLAGS, '-cp', classpath, 'kafka.tools.StorageTool', 'format', '-t', clusterId(), '-c', config], 60_000);
      const brokers = [`127.0.0.1:${port}`];
      const launch = () => {
        const log = openSync(logFile, 'a');
        try {
          child = spawn(java, [...JVM_FLAGS, ...LOG_FLAGS, '-cp', classpath, 'kafka.Kafka', config], { stdio: ['ignore', log, log] });
        } finally {
          closeSync(log);
        }
        return child;
      };
      try {
        const launched = launch();
        options.onLaunch?.();
        await waitUntilReady(launched, brokers, startTimeoutMs, logFile);
      } catch (error) {
        lastError = error;
        await stopProcess(child, 'SIGKILL');
        continue; // most likely a port was taken between probing and binding
      }
      return {
        brokers,
        owned: true,
        logFile,
        async restart({ hard = false, whileDown } = {}) {
          await stopProcess(child, hard ? 'SIGKILL' : 'SIGTERM');
          try {
            await whileDown?.();
          } finally {
            await waitUntilReady(launch(), brokers, startTimeoutMs, logFile);
          }
        },
        async stop() {
          process.off('exit', onExit);
          await stopProcess(child, 'SIGTERM');
          rmSync(root, { recursive: true, force: true });
        },
      };
    }
    throw lastError;
  } catch (error) {
    process.off('exit', onExit);
    onExit();
    throw error;
  }
}

/** The broker of this test run, as published by globalSetup. */
export function testKafkaBrokers(): string[] {
  const brokers = process.env[TEST_KAFKA_BROKERS_ENV];
  if (brokers === undefined || brokers === '') {
    throw new Error(
      `${TEST_KAFKA_BROKERS_ENV} is not set: run the suite through jest as an integration (*.int.spec.ts) or e2e (*.e2e.spec.ts) suite, whose global setup starts Kafka`,
    );
  }
  return brokers.split(',').map((broker) => broker.trim());
}

/** The cached broker jars; fetches them with Maven (.ci/fetch-kafka.sh) the first time. */
export function kafkaLibs(): string {
  const repoRoot = findRepoRoot();
  const pom = readFileSync(join(repoRoot, POM), 'utf8');
  const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1];
  if (version === undefined) throw new Error(`no <kafka.version> in ${POM}`);
  const libs = join(repoRoot, '.cache', `kafka-${version}`, 'libs');
  if (existsSync(join(libs, '.complete'))) return libs;
  const fetch = spawnSync('bash', [join(repoRoot, FETCH_SCRIPT)], { encoding: 'utf8', timeout: 600_000 });
  if (fetch.status !== 0 || !existsSync(join(libs, '.complete'))) {
    throw new Error(
      `Kafka ${version} jars are not in ${libs} and ${FETCH_SCRIPT} could not fetch them ` +
        `(${fetch.error?.message ?? `exit ${fetch.status}`}):\n${fetch.stderr}\n` +
        `Run it where Maven Central is reachable, or set ${TEST_KAFKA_BROKERS_ENV} to a running broker.`,
    );
  }
  return libs;
}

function serverProperties({ port, controllerPort, dataDir }: { port: number; controllerPort: number; dataDir: string }): string {
  const settings: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': dataDir,
    'num.partitions': 4,
    'default.replication.factor': 1,
    'min.insync.replicas': 1,
    // Topics exist only through ensureTopics, as in production: a missing call fails loudly.
    'auto.create.topics.enable': 'false',
    'offsets.topic.replication.factor': 1,
    // The default 50 partitions make the first consumer group wait for their creation.
    'offsets.topic.num.partitions': 4,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'share.coordinator.state.topic.replication.factor': 1,
    'share.coordinator.state.topic.min.isr': 1,
    'group.initial.rebalance.delay.ms': 0,
    // Lets a test use a short consumer session (the default minimum is 6 s).
    'group.min.session.timeout.ms': 1000,
    // After a hard kill the restarted broker waits for its previous session to expire (9 s by default).
    'broker.session.timeout.ms': 3000,
    'broker.heartbeat.interval.ms': 500,
  };
  return `${Object.entries(settings)
    .map(([key, value]) => `${key}=${value}`)
    .join('\n')}\n`;
}

function findJava(): string {
  const javaHome = process.env.JAVA_HOME;
  const java =
    javaHome !== undefined && javaHome !== '' && existsSync(join(javaHome, 'bin', 'java')) ? join(javaHome, 'bin', 'java') : 'java';
  const probe = spawnSync(java, ['-version'], { encoding: 'utf8', timeout: 30_000 });
  const major = Number(/version "(\d+)/.exec(`${probe.stderr}${probe.stdout}`)?.[1] ?? Number.NaN);
  if (probe.status !== 0 || !(major >= 17)) {
    throw new Error(
      `Kafka's broker needs Java 17 or later, found ${probe.error !== undefined ? `none (${probe.error.message})` : `"${probe.stderr.split('\n')[0]}"`}: ` +
        `install Debian's openjdk-17-jre-headless or set ${TEST_KAFKA_BROKERS_ENV} to a running broker`,
    );
  }
  return java;
}

function findRepoRoot(): string {
  for (let dir = process.cwd(); ; dir = dirname(dir)) {
    if (existsSync(join(dir, POM))) return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find ${POM} above ${process.cwd()}: run the tests from the repository`);
  }
}

/** A KRaft cluster id: 16 random bytes, base64url without padding (Kafka's Uuid format). */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id; // Kafka avoids ids that read as a command-line flag
  }
}

function runJava(java: string, args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(java, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`java ${args.slice(-6).join(' ')} failed (${signal ?? `exit ${code}`}):\n${output}`));
    });
  });
}

/** Waits until the broker accepts connections and answers a metadata request. */
async function waitUntilReady(child: ChildProcess, brokers: string[], timeoutMs: number, logFile: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const fail = (reason: string) =>
    new Error(`Kafka broker ${brokers.join(',')} ${reason}; its log (${logFile}) ends with:\n${logTail(logFile)}`);
  const [host, port] = brokers[0].split(':') as [string, string];
  while (!(await canConnect(host, Number(port)))) {
    if (exited()) throw fail(`exited (${child.signalCode ?? `code ${child.exitCode}`}) before listening`);
    if (Date.now() > deadline) throw fail(`did not listen within ${timeoutMs} ms`);
    await sleep(100);
  }
  const admin = new kafkajs.Kafka({
    clientId: 'flostra-test-harness',
    brokers,
    logLevel: kafkajs.logLevel.NOTHING,
    retry: { retries: 0 },
  }).admin();
  try {
    for (;;) {
      try {
        await admin.connect();
        const cluster = await admin.describeCluster();
        if (cluster.brokers.length > 0 && cluster.controller !== null) return;
      } catch (error) {
        if (Date.now() > deadline) throw fail(`did not answer within ${timeoutMs} ms (${String(error)})`);
      }
      if (exited()) throw fail(`exited (${child.signalCode ?? `code ${child.exitCode}`})`);
      if (Date.now() > deadline) throw fail(`did not answer within ${timeoutMs} ms`);
      await sleep(100);
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function stopProcess(child: ChildProcess | undefined, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function freePorts(count: number): Promise<number[]> {
  // Hold every probe socket open until all are chosen, so the ports differ.
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
  const ports = servers.map((server) => {
    const address = server.address();
    return typeof address === 'object' && address !== null ? address.port : 0;
  });
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

function logTail(logFile: string): string {
  try {
    return readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n');
  } catch {
    return '(no broker log)';
  }
}
