import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createApp } from './create-app.js';
import { TokenRegistry } from '../auth/token-registry.js';
import { InProcessBus } from '../bus/in-process/in-process-bus.js';
import { loadConfig } from '../config/config.js';
import { systemClock } from '../core/clock.port.js';
import { randomIds } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { PostgresEventStore } from '../event-store/postgres/postgres-event-store.js';
import { PgliteSqlClient } from '../postgres/pglite-sql-client.js';
import { renderApiReference } from '../http/openapi/api-reference.renderer.js';
import { stringifyDocument } from '../http/openapi/document-order.js';
import { OpenApiDocuments } from '../http/openapi/openapi-documents.js';

/**
 * `npm run docs:openapi`: builds the application (over an in-memory PGlite, nothing listens)
 * and writes its OpenAPI document and the reference rendered from it to docs/. The drift test
 * (test/openapi/) fails until they are committed as generated.
 */
async function main(): Promise<void> {
  const root = process.cwd();
  const sql = await PgliteSqlClient.open();
  const store = await PostgresEventStore.open(sql);
  const bus = new InProcessBus();
  const logger = createLogger({ level: 'error' });
  const app = await createApp({
    config: loadConfig({}),
    store,
    readModelSql: sql,
    bus,
    clock: systemClock,
    ids: randomIds,
    logger,
    registry: new TokenRegistry(),
  });
  try {
    const document = app.get(OpenApiDocuments).current();
    mkdirSync(join(root, 'docs'), { recursive: true });
    writeFileSync(join(root, 'docs', 'openapi.json'), stringifyDocument(document));
    writeFileSync(join(root, 'docs', 'api-reference.md'), renderApiReference(document));
    process.stdout.write(`wrote docs/openapi.json and docs/api-reference.md (${Object.keys(document.paths ?? {}).length} paths)\n`);
  } finally {
    await app.close();
    await bus.close();
    await store.close();
    await sql.close();
  }
}

await main();
