import type { KafkaBroker } from './support/kafka-broker.js';
import type { PostgresServer } from './support/postgres-server.js';

/** Stops the services that global-setup.ts started (globalThis is shared by both hooks). */
export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as { flostraPostgresServer?: PostgresServer; flostraKafkaBroker?: KafkaBroker };
  try {
    await holder.flostraKafkaBroker?.stop();
  } finally {
    holder.flostraKafkaBroker = undefined;
    await holder.flostraPostgresServer?.stop();
    holder.flostraPostgresServer = undefined;
  }
}
