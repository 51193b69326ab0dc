import type * as KafkaBrokerModule from './kafka-broker.js';
import type * as PostgresServerModule from './postgres-server.js';

// Jest loads its global hooks as CommonJS through its transformer, where the ESM module mapper
// that turns `.js` specifiers into `.ts` sources does not apply: require the harnesses by source.
const { startPostgresServer, TEST_DATABASE_URL_ENV } = require('./postgres-server.ts') as typeof PostgresServerModule;
const { startKafkaBroker, TEST_KAFKA_BROKERS_ENV } = require('./kafka-broker.ts') as typeof KafkaBrokerModule;

/** A service a test tier needs for the whole jest run. */
export type TestServiceName = 'postgres' | 'kafka';

interface Running {
  stop(): Promise<void>;
  /** The env var that publishes it to the suites, and whether this process set it. */
  env: string;
  setEnv: boolean;
  /** The tiers whose global setup acquired it and whose teardown has not released it yet. */
  users: Set<string>;
}

/**
 * What the global setups of this jest run started, shared between them. Jest runs every
 * project's globalSetup one after another in its parent process, before any test, and every
 * globalTeardown after the last test of every project: a service that two tiers need is
 * started by the first setup, found here by the second, and stopped by the last teardown.
 */
const REGISTRY = Symbol.for('flostra.testServices');
type Holder = { [REGISTRY]?: Map<TestServiceName, Running> };

function registry(): Map<TestServiceName, Running> {
  const holder = globalThis as Holder;
  return (holder[REGISTRY] ??= new Map());
}

/**
 * Starts the services `tier` needs that are not running yet, side by side, and publishes them
 * through their env vars (FLOSTRA_TEST_DATABASE_URL, FLOSTRA_TEST_KAFKA_BROKERS), which suites
 * read in band or in workers. A service already named by its env var when the run began is
 * reused and never stopped. Throws when a service cannot start (after stopping what this call
 * started): a tier that needs it fails loudly, it never skips.
 */
export async function acquireTestServices(tier: string, names: readonly TestServiceName[]): Promise<void> {
  const running = registry();
  const missing = names.filter((name) => !running.has(name));
  for (const name of names) running.get(name)?.users.add(tier);
  if (missing.length === 0) return;

  const started: Array<[TestServiceName, Running]> = [];
  const keep = (name: TestServiceName, env: string, value: string, stop: () => Promise<void>) => {
    const setEnv = process.env[env] !== value;
    process.env[env] = value;
    started.push([name, { stop, env, setEnv, users: new Set([tier]) }]);
  };
  const failures: unknown[] = [];

  // Postgres' harness blocks the event loop while it starts: begin it once the broker's JVM is
  // booting, so the two start side by side.
  let kafka: Promise<KafkaBrokerModule.KafkaBroker> | undefined;
  if (missing.includes('kafka')) {
    let launched!: () => void;
    const kafkaLaunched = new Promise<void>((resolve) => (launched = resolve));
    kafka = startKafkaBroker({ onLaunch: () => launched() });
    await Promise.race([
      kafkaLaunched,
      kafka.then(
        () => undefined,
        () => undefined,
      ),
    ]);
  }
  if (missing.includes('postgres')) {
    try {
      const server = await startPostgresServer();
      keep('postgres', TEST_DATABASE_URL_ENV, server.url, () => server.stop());
    } catch (error) {
      failures.push(error);
    }
  }
  if (kafka !== undefined) {
    // Awaited even when Postgres failed, so that a booting JVM is stopped, never left behind.
    try {
      const broker = await kafka;
      keep('kafka', TEST_KAFKA_BROKERS_ENV, broker.brokers.join(','), () => broker.stop());
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) {
    for (const [, service] of started.reverse()) await stopService(service).catch(() => undefined);
    throw failures.length === 1
      ? failures[0]
      : new AggregateError(failures, `the ${tier} tests' services could not start: ${failures.map(String).join('; ')}`);
  }
  for (const [name, service] of started) running.set(name, service);
}

/** Releases what `tier` acquired; a service stops once no tier of this run needs it any more. */
export async function releaseTestServices(tier: string): Promise<void> {
  const running = registry();
  const errors: unknown[] = [];
  // Kafka first, then Postgres: the reverse of their start.
  for (const name of ['kafka', 'postgres'] as const) {
    const service = running.get(name);
    if (service === undefined || !service.users.delete(tier) || service.users.size > 0) continue;
    running.delete(name);
    try {
      await stopService(service);
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length > 0) throw errors.length === 1 ? errors[0] : new AggregateError(errors, 'stopping the test services failed');
}

async function stopService(service: Running): Promise<void> {
  try {
    await service.stop();
  } finally {
    if (service.setEnv) delete process.env[service.env];
  }
}
