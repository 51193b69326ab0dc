import type * as KafkaBrokerModule from './support/kafka-broker.js';
import type * as PostgresServerModule from './support/postgres-server.js';

// Jest loads this hook as CommonJS through its transformer, where the ESM module mapper that
// turns `.js` specifiers into `.ts` sources does not apply: require the harness by its source.
const { startPostgresServer, TEST_DATABASE_URL_ENV } = require('./support/postgres-server.ts') as typeof PostgresServerModule;
const { startKafkaBroker, TEST_KAFKA_BROKERS_ENV } = require('./support/kafka-broker.ts') as typeof KafkaBrokerModule;

interface Holder {
  flostraPostgresServer?: PostgresServerModule.PostgresServer;
  flostraKafkaBroker?: KafkaBrokerModule.KafkaBroker;
}

/**
 * Starts one real PostgreSQL and one real Kafka broker for the whole jest run. Runs in jest's
 * parent process: suites (in band or in workers, which inherit the environment) find them
 * through the env vars.
 */
export default async function globalSetup(): Promise<void> {
  const holder = globalThis as Holder;
  // Postgres' harness blocks the event loop while it starts: begin it once the broker's JVM is
  // booting, so the two start side by side.
  let launched!: () => void;
  const kafkaLaunched = new Promise<void>((resolve) => (launched = resolve));
  const kafka = startKafkaBroker({ onLaunch: () => launched() });
  await Promise.race([kafkaLaunched, kafka.then(
    () => undefined,
    () => undefined,
  )]);

  let server: PostgresServerModule.PostgresServer;
  try {
    server = await startPostgresServer();
  } catch (error) {
    await kafka.then((broker) => broker.stop(), () => undefined);
    throw error;
  }
  process.env[TEST_DATABASE_URL_ENV] = server.url;
  holder.flostraPostgresServer = server;

  // A broker that cannot start fails the run here; teardown then stops Postgres.
  let broker: KafkaBrokerModule.KafkaBroker;
  try {
    broker = await kafka;
  } catch (error) {
    await server.stop();
    holder.flostraPostgresServer = undefined;
    throw error;
  }
  process.env[TEST_KAFKA_BROKERS_ENV] = broker.brokers.join(',');
  holder.flostraKafkaBroker = broker;
}
