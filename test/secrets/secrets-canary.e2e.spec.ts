import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { TOPICS } from '../../src/core/bus.port.js';
import { createLogger } from '../../src/core/logger.js';
import { PgliteSqlClient } from '../../src/postgres/pglite-sql-client.js';
import { DISPATCH_DLQ_TOPIC } from '../../src/worker/runtime/worker.service.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import {
  collectSse,
  dumpTables,
  EchoServer,
  Evidence,
  newCanary,
  readFilesUnder,
  readTopics,
  runCanaryWorkflows,
  type CanaryActors,
} from '../support/secrets/canary.js';
import { MAIN, startEmbedded } from '../support/secrets/embedded.js';
import { startTestApp, TOKENS } from '../support/test-app.js';

/**
 * The fault test of "values never leak" (docs/architecture.md, "Secrets"): a secret whose value
 * is a unique canary is used in an http node's url, headers and body against an upstream that
 * echoes it back in several encodings, on the happy path, on failure, on retry and on cancel.
 * Then every byte that left the process is searched for the canary and its base64, base64url,
 * URL-encoded, HTML-escaped and hex forms: every row of every table of the database (event store, read
 * models, secret_values), every message of both Kafka topics and both dead-letter topics, the
 * logs at debug, every SSE message and every API response the test received. The upstream is
 * the only place it may be.
 */

const TERMINAL_EVENT = /event: Execution(Succeeded|Failed|Cancelled|TimedOut)\n/;

describe('secret values never leave the process (the canary)', () => {
  const echo = new EchoServer();
  beforeAll(() => echo.start());
  afterAll(() => echo.stop());

  /** Follows the workspace live while the workflows run, then replays each execution's stream. */
  async function runWatched(url: string, api: ApiClient, actors: CanaryActors, canary: string, evidence: Evidence): Promise<unknown> {
    const live = collectSse(`${url}/v1/workspaces/${actors.workspace}/events`, actors.viewer, evidence, 'sse workspace');
    await eventually(() => live.text().includes('flostra live events'), 'the workspace stream to open');
    const { ids, happyOutput } = await runCanaryWorkflows(api, actors, echo, canary);
    for (const id of ids) {
      const replay = collectSse(`${url}/v1/executions/${id}/events`, actors.viewer, evidence, `sse execution ${id}`);
      await eventually(() => TERMINAL_EVENT.test(replay.text()), `the replay of ${id} to reach its end`);
      await replay.stop();
    }
    await eventually(
      () => (live.text().match(new RegExp(TERMINAL_EVENT, 'g')) ?? []).length === ids.length,
      'every end on the live stream',
    );
    await live.stop();
    return happyOutput;
  }

  function expectNowhere(evidence: Evidence, canary: string, happyOutput: unknown): void {
    const findings = evidence.findings(canary);
    if (findings.length > 0) throw new Error(`the canary leaked (${findings.length} places):\n${findings.slice(0, 20).join('\n')}`);
    // Redacted, not merely absent: the upstream's echoes came back and were replaced.
    expect(JSON.stringify(happyOutput)).toContain('[redacted:CANARY]');
  }

  it('on Postgres and Kafka: nowhere in the store, the topics, the read models, the logs, SSE or any answer', async () => {
    const canary = newCanary();
    const evidence = new Evidence();
    const logs: string[] = [];
    const logger = createLogger({ level: 'debug', write: (line) => logs.push(line) });
    const brokers = testKafkaBrokers();
    await ensureTopic(brokers, DISPATCH_DLQ_TOPIC);
    const bus = new KafkaBus({ brokers, clientId: 'canary', logger });
    const t = await startTestApp(
      'postgres',
      { FLOSTRA_SECRETS_KEY: randomBytes(32).toString('base64') },
      { bus, worker: { egressAllow: ['127.0.0.1/32'] }, logger },
    );
    let topics: Map<string, number>;
    let tables: string[];
    let happyOutput: unknown;
    try {
      const api = client(t.url, { onResponse: (r) => evidence.add(`response ${r.method} ${r.path} → ${r.status}`, r.text) });
      const actors = { workspace: 'ws-a', admin: TOKENS.adminA, operator: TOKENS.operatorA, viewer: TOKENS.viewerA };
      happyOutput = await runWatched(t.url, api, actors, canary, evidence);
      await t.waitForProjections();
      // The audit trail of the workspace is an answer like any other.
      expect((await api.get('/v1/workspaces/ws-a/audit?limit=200', { token: TOKENS.adminA })).status).toBe(200);
      const { rows } = await t.readModelSql.query<{ ciphertext: Uint8Array }>('select ciphertext from secret_values');
      expect(rows).toHaveLength(1);
      expect(Buffer.from(rows[0].ciphertext).includes(canary)).toBe(false);
      tables = await dumpTables(t.readModelSql, evidence, 'postgres');
      topics = await readTopics(brokers, [TOPICS.dispatch, TOPICS.results, TOPICS.resultsDlq, DISPATCH_DLQ_TOPIC], evidence);
    } finally {
      await t.close();
      await bus.close();
    }
    evidence.add('logs', logs.join('\n'));

    // The search covered what it says it did.
    expect(tables).toEqual(expect.arrayContaining(['event_store.events', 'public.secret_values', 'public.dispatch_schedule']));
    expect(tables.some((name) => name.startsWith('read_models.timeline'))).toBe(true);
    expect(tables.some((name) => name.startsWith('read_models.audit'))).toBe(true);
    expect(topics.get(TOPICS.results)).toBeGreaterThan(0);
    expect(topics.get(TOPICS.dispatch)).toBeGreaterThan(0);
    expect([...topics.keys()].sort()).toEqual([TOPICS.dispatch, DISPATCH_DLQ_TOPIC, TOPICS.resultsDlq, TOPICS.results].sort());
    expect(logs.some((line) => line.includes('"level":"debug"'))).toBe(true);
    expect(evidence.count('sse execution')).toBe(4);
    expect(evidence.count('response')).toBeGreaterThan(20);
    expectNowhere(evidence, canary, happyOutput);
  }, 180_000);

  it('embedded on PGlite with a data directory: nowhere in its files, its tables, its output, SSE or any answer', async () => {
    if (!existsSync(MAIN)) throw new Error('dist/src/main.js is missing: run `npm run build` (npm test does)');
    const canary = newCanary();
    const evidence = new Evidence();
    const dataDir = mkdtempSync(join(tmpdir(), 'flostra-canary-'));
    let happyOutput: unknown;
    try {
      const server = await startEmbedded(dataDir, { LOG_LEVEL: 'debug' });
      try {
        const tokens = JSON.parse(readFileSync(join(dataDir, 'dev-tokens.json'), 'utf8')) as { workspace: string; admin: string };
        const api = client(server.url, { onResponse: (r) => evidence.add(`response ${r.method} ${r.path} → ${r.status}`, r.text) });
        const actors = { workspace: tokens.workspace, admin: tokens.admin, operator: tokens.admin, viewer: tokens.admin };
        happyOutput = await runWatched(server.url, api, actors, canary, evidence);
      } finally {
        await server.stop();
      }
      evidence.add('process output', server.output());
      expect(server.output()).toContain(`Secrets are encrypted with the key in ${join(dataDir, 'secrets.key')}`);
      expect(server.output()).toContain('"level":"debug"');
      const files = await readFilesUnder(dataDir, evidence, 'file');
      expect(files).toBeGreaterThan(10);
      // The files may hold rows compressed; read every table back in the clear as well.
      const sql = await PgliteSqlClient.open(join(dataDir, 'pgdata'));
      try {
        const tables = await dumpTables(sql, evidence, 'pglite');
        expect(tables).toEqual(expect.arrayContaining(['event_store.events', 'public.secret_values']));
      } finally {
        await sql.close();
      }
      expect(evidence.count('sse execution')).toBe(4);
      expectNowhere(evidence, canary, happyOutput);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});

/** Flostra creates neither dead-letter topic of workers itself: made here so a dead letter would have somewhere to land and be read. */
async function ensureTopic(brokers: string[], topic: string): Promise<void> {
  const admin = new kafkajs.Kafka({ clientId: 'canary-admin', brokers, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic))
      await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}
