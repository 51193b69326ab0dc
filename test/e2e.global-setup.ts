import type * as TestServices from './support/test-services.js';

// Jest loads this hook as CommonJS through its transformer, where the ESM module mapper that
// turns `.js` specifiers into `.ts` sources does not apply: require the harness by its source.
const { acquireTestServices } = require('./support/test-services.ts') as typeof TestServices;

/**
 * The e2e tier's services: a real PostgreSQL (the app on the `postgres` store) and a real Kafka
 * broker (the Kafka fault suite's full stack). Shared with the integration tier when both run in
 * one jest run. The suites that spawn `dist/src/main.js` need a build first (npm run test:e2e
 * and npm test build); headless Chromium is launched by the browser suite itself.
 */
export default async function globalSetup(): Promise<void> {
  await acquireTestServices('e2e', ['postgres', 'kafka']);
}
