import type * as TestServices from './support/test-services.js';

// Jest loads this hook as CommonJS through its transformer, where the ESM module mapper that
// turns `.js` specifiers into `.ts` sources does not apply: require the harness by its source.
const { acquireTestServices } = require('./support/test-services.ts') as typeof TestServices;

/**
 * The integration tier's services: a real PostgreSQL (the Postgres adapters and contracts, the
 * dispatcher, ingestor and watchdog on Postgres, the projection harness) and a real Kafka broker
 * (the bus contract, publish batching). Shared with the e2e tier when both run in one jest run.
 * PGlite, the KurrentDB double and loopback HTTP servers live inside the suites themselves.
 */
export default async function globalSetup(): Promise<void> {
  await acquireTestServices('integration', ['postgres', 'kafka']);
}
