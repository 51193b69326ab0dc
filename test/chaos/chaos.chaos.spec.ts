import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import { createLogger } from '../../src/core/logger.js';
import { PostgresEventStore } from '../../src/event-store/postgres/postgres-event-store.js';
import { parseExecutionEvent } from '../../src/executions/domain/execution-event.parser.js';
import { PgSqlClient } from '../../src/postgres/pg-sql-client.js';
import { liveCheckpoint } from '../../src/projector/projection-catalog.js';
import { ProjectionSignals } from '../../src/projector/projection-signals.js';
import { Projector } from '../../src/projector/projector.js';
import { ensureCatalog } from '../../src/projector/projector.schema.js';
import { PROJECTION_DEFINITIONS } from '../../projections/projections.registry.js';
import { dumpReadModels, expectReadModelsEqualTheLog } from '../projections/support/projection-harness.js';
import { APP_READY, assertBuilt, spawnAppProcess, WORKER_READY, type AppProcess } from '../support/app-process.js';
import { eventually, sleep } from '../support/eventually.js';
import { client } from '../support/http-client.js';
import { startKafkaBroker, type KafkaBroker } from '../support/kafka-broker.js';
import { createTestDatabase, freePort, startPostgresServer, type PostgresServer } from '../support/postgres-server.js';
import { EffectSink } from './effect-sink.js';

/**
 * The chaos suite: every role in a process of its own on its own Postgres and Kafka, a steady
 * closed-loop load of executions whose `http` nodes act on a loopback sink, and one fault after
 * another (each role SIGKILLed and restarted, Postgres and Kafka restarted, the dispatcher frozen
 * with SIGSTOP). Then the books are checked: nothing acknowledged is lost, no effect ran twice in
 * one attempt, SSE replays the log, and every read model equals a fresh rebuild.
 */
const ROLES = ['api', 'dispatcher', 'ingestor', 'projector', 'watchdog', 'worker'] as const;
type Role = (typeof ROLES)[number];
const TOKENS = { admin: 'chaos-admin-token-0001', operator: 'chaos-operator-token-01', worker: 'chaos-worker-token-0001' };
const CONCURRENCY = 3;
const EFFECT_NODES = ['charge', 'notify'];
const STEADY_MS = 1_500;
const SSE_SAMPLE = 20;

type Outcome = { executionId: string; status: string };

describe('chaos: roles, Postgres and Kafka fail one after another under load', () => {
  const sink = new EffectSink();
  const processes = new Map<Role, AppProcess>();
  const dir = mkdtempSync(join(tmpdir(), 'flostra-chaos-'));
  let postgres: PostgresServer;
  let broker: KafkaBroker;
  let databaseUrl: string;
  let apiUrl: string;

  beforeAll(async () => {
    assertBuilt();
    await sink.start();
    // The broker's JVM boots while Postgres' harness (which blocks the event loop) starts.
    let launched!: () => void;
    const kafka = startKafkaBroker({ reuseExisting: false, onLaunch: () => launched() });
    await Promise.race([new Promise<void>((resolve) => (launched = resolve)), kafka.catch(() => undefined)]);
    postgres = await startPostgresServer({ reuseExisting: false });
    broker = await kafka;
    databaseUrl = await createTestDatabase('chaos', postgres.url);
    apiUrl = `http://127.0.0.1:${await freePort()}`;
    writeFileSync(
      join(dir, 'tokens.json'),
      JSON.stringify({
        tokens: [
          { token: TOKENS.admin, subject: 'chaos-admin', workspaces: { 'ws-chaos': 'admin' } },
          { token: TOKENS.operator, subject: 'chaos-operator', workspaces: { 'ws-chaos': 'operator' } },
          { token: TOKENS.worker, subject: 'chaos-worker', global: ['worker'] },
        ],
      }),
    );
    // The api first, then the roles that create the topics and consume them, then the worker,
    // which expects its topics to exist.
    await startRole('api');
    await Promise.all(ROLES.filter((role) => role !== 'api' && role !== 'worker').map(startRole));
    await startRole('worker');
  }, 180_000);

  afterAll(async () => {
    for (const child of processes.values()) {
      await child.signal('SIGCONT');
      await child.signal('SIGKILL');
    }
    await broker?.stop();
    await postgres?.stop();
    await sink.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function startRole(role: Role): Promise<void> {
    const env: Record<string, string> = {
      FLOSTRA_ROLES: role,
      KAFKA_BROKERS: broker.brokers.join(','),
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      FLOSTRA_DATA_DIR: join(dir, role),
    };
    if (role === 'worker') {
      Object.assign(env, {
        FLOSTRA_API_URL: apiUrl,
        FLOSTRA_WORKER_TOKEN: TOKENS.worker,
        FLOSTRA_EGRESS_ALLOW: '127.0.0.1/32',
        FLOSTRA_WORKER_CONCURRENCY: '4',
      });
    } else {
      Object.assign(env, {
        EVENT_STORE_URL: databaseUrl,
        FLOSTRA_TOKENS_FILE: join(dir, 'tokens.json'),
        // The api on a fixed port, so that the worker finds it again after a restart.
        PORT: role === 'api' ? new URL(apiUrl).port : '0',
      });
    }
    processes.set(role, await spawnAppProcess(env, role === 'worker' ? WORKER_READY : APP_READY, 90_000));
  }

  it('loses nothing and duplicates nothing', async () => {
    const api = client(apiUrl);
    const started = Date.now();
    const graph = {
      nodes: EFFECT_NODES.map((id) => ({ id, type: 'http', config: { method: 'POST', url: `${sink.url}/${id}`, body: { effect: id } } })),
      edges: [{ from: 'charge', to: 'notify' }],
      retry: { maxAttempts: 20, initialIntervalMs: 100, maxIntervalMs: 1_000 },
      timeouts: { leaseMs: 3_000 },
    };
    const put = await api.put('/v1/workspaces/ws-chaos/workflows/chaos', { token: TOKENS.admin, body: graph });
    expect([200, 201]).toContain(put.status);

    // The load: CONCURRENCY loops, each starts an execution (retrying the same Idempotency-Key
    // until it is acknowledged) and waits for its end before the next.
    const acknowledged: string[] = [];
    const outcomes: Outcome[] = [];
    let stopping = false;
    const tryRequest = async <T>(request: () => Promise<T>): Promise<T | null> => {
      try {
        return await request();
      } catch {
        return null; // the api is down or restarting: try again
      }
    };
    async function startOne(key: string): Promise<string | null> {
      while (!stopping) {
        const response = await tryRequest(() =>
          api.post('/v1/workspaces/ws-chaos/workflows/chaos/executions', {
            token: TOKENS.operator,
            body: {},
            headers: { 'idempotency-key': key },
          }),
        );
        if (response !== null && (response.status === 201 || response.status === 200)) return response.body.executionId as string;
        await sleep(200);
      }
      return null;
    }
    async function outcomeOf(executionId: string, timeoutMs: number): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const view = await tryRequest(() => api.get(`/v1/executions/${executionId}`, { token: TOKENS.operator }));
        const status = view?.status === 200 ? (view.body.status as string) : null;
        if (status !== null && ['succeeded', 'failed', 'timed_out', 'cancelled'].includes(status)) return status;
        await sleep(100);
      }
      return 'unfinished';
    }
    async function loop(n: number): Promise<void> {
      for (let i = 0; !stopping; i++) {
        const executionId = await startOne(`chaos-${n}-${i}`);
        if (executionId === null) return;
        acknowledged.push(executionId);
        outcomes.push({ executionId, status: await outcomeOf(executionId, 120_000) });
      }
    }
    const loops = Array.from({ length: CONCURRENCY }, (_, n) => loop(n));

    // Each fault, then the load runs until CONCURRENCY more executions have finished (the system
    // recovered), then a short steady period. recoverySeconds: from the fault to that point.
    const faults: string[] = [];
    const recoverySeconds: Record<string, number> = {};
    const recovered = async (what: string) => {
      const target = outcomes.length + CONCURRENCY;
      try {
        await eventually(() => outcomes.length >= target, {
          what: `${CONCURRENCY} executions to finish after ${what}`,
          timeoutMs: 120_000,
        });
      } catch (error) {
        // What each process said last: the failure's cause is usually in one of them.
        const tails = [...processes].map(([role, child]) => `--- ${role} (last 4,000 characters)\n${child.output().slice(-4_000)}`);
        throw new Error(`${(error as Error).message}\n${tails.join('\n')}`, { cause: error });
      }
    };
    const inject = async (fault: string, act: () => Promise<void>) => {
      const since = Date.now();
      faults.push(fault);
      await act();
      await recovered(fault);
      recoverySeconds[fault] = Math.round((Date.now() - since) / 100) / 10;
      await sleep(STEADY_MS);
    };
    await recovered('the start');

    // 1. Each role SIGKILLed, then started again.
    for (const role of ROLES) {
      await inject(`kill ${role}`, async () => {
        await processes.get(role)!.signal('SIGKILL');
        await startRole(role);
      });
    }
    // 2. Postgres and Kafka restarted (Kafka killed hard), with the roles running.
    await inject('restart postgres', () => postgres.restart({ whileDown: () => sleep(2_000) }));
    await inject('restart kafka', () => broker.restart({ hard: true, whileDown: () => sleep(1_000) }));
    // 3. The dispatcher frozen for longer than a lease, then thawed.
    await inject('stop dispatcher', async () => {
      const dispatcher = processes.get('dispatcher')!;
      await dispatcher.signal('SIGSTOP');
      await sleep(6_000);
      await dispatcher.signal('SIGCONT');
    });

    stopping = true;
    await Promise.all(loops);

    // The books. The log is read directly from the store, the rest over HTTP as a client would.
    const sql = new PgSqlClient({ connectionString: databaseUrl, max: 4 });
    const store = await PostgresEventStore.open(sql);
    try {
      const histories = new Map<string, RecordedEvent[]>();
      for (const id of acknowledged) histories.set(id, await store.readStream(`execution-${id}`));
      // What a lost execution's log holds, to tell where it stopped.
      const lostIds = outcomes
        .filter((o) => o.status !== 'succeeded')
        .map(
          (o) =>
            `${o.executionId} ${o.status}: ${histories
              .get(o.executionId)!
              .map((e) => e.type)
              .join(' ')}`,
        );
      // Every effect of a succeeded execution arrived at the sink at least once.
      const missingEffects = acknowledged.flatMap((id) =>
        EFFECT_NODES.map((node) => `${id}:${node}`).filter((key) => !sink.deliveries.has(key)),
      );
      // A key may arrive again only from a later attempt (the first died before its result was
      // recorded): more deliveries than attempts, or a node recorded as succeeded twice, is a duplicate.
      const duplicates: string[] = [];
      let redelivered = 0;
      for (const [id, events] of histories) {
        const attempts = events.filter((e) => e.type === 'AttemptClaimed').length;
        for (const node of EFFECT_NODES) {
          const deliveries = sink.deliveries.get(`${id}:${node}`) ?? 0;
          const succeeded = events.filter((e) => e.type === 'NodeSucceeded' && (e.data as { nodeId?: string }).nodeId === node).length;
          if (deliveries > 1) redelivered++;
          if (deliveries > attempts || succeeded > 1) duplicates.push(`${id}:${node} (${deliveries} deliveries, ${attempts} attempts)`);
        }
      }
      const figures = {
        executions: acknowledged.length,
        faultsInjected: faults.length,
        faults,
        lost: lostIds.length + missingEffects.length,
        duplicated: duplicates.length + sink.unkeyed,
        redeliveredWithSameKey: redelivered,
        effects: [...sink.deliveries.values()].reduce((a, b) => a + b, 0),
        recoverySeconds,
        seconds: Math.round((Date.now() - started) / 1000),
      };
      process.stdout.write(`${JSON.stringify(figures)}\n`);
      expect({ lost: lostIds, missingEffects, duplicates }).toEqual({ lost: [], missingEffects: [], duplicates: [] });
      expect(acknowledged.length).toBeGreaterThanOrEqual(faults.length * CONCURRENCY);

      // SSE: the live stream of a sample of executions replays exactly their events.
      const step = Math.max(1, Math.floor(acknowledged.length / SSE_SAMPLE));
      for (const id of acknowledged.filter((_, i) => i % step === 0).slice(0, SSE_SAMPLE)) {
        const expected = histories.get(id)!.map((e) => ({
          id: e.position,
          type: e.type,
          eventId: e.id,
          revision: e.revision,
          data: JSON.parse(JSON.stringify(parseExecutionEvent(e).data)) as unknown,
        }));
        expect(await sseEvents(`${apiUrl}/v1/executions/${id}/events`, TOKENS.operator, expected.length)).toEqual(expected);
      }

      // Read models: equal to the log's fold, and to a rebuild from scratch in another database.
      const head = await store.headPosition();
      await eventually(
        async () => {
          for (const { name } of PROJECTION_DEFINITIONS) if ((await liveCheckpoint(sql, name))! < head!) return false;
          return true;
        },
        { what: 'the live read models to apply the whole log', timeoutMs: 60_000 },
      );
      await expectReadModelsEqualTheLog(store, sql);
      expect(await rebuiltFromScratch(store, head!)).toEqual(await dumpReadModels(sql));
    } finally {
      await store.close();
      await sql.close();
    }
  }, 360_000);

  /** Every read model built by a new projector from the log alone, in a new database. */
  async function rebuiltFromScratch(store: EventStore, head: string) {
    const sql = new PgSqlClient({ connectionString: await createTestDatabase('chaos_rebuild', postgres.url), max: 4 });
    await ensureCatalog(sql, PROJECTION_DEFINITIONS);
    const signals = new ProjectionSignals(sql);
    const projector = new Projector({
      sql,
      store,
      definitions: PROJECTION_DEFINITIONS,
      signals,
      logger: createLogger({ level: 'silent' }),
      options: { reconcileIntervalMs: 50, retryDelayMs: 50 },
    });
    projector.start();
    try {
      await eventually(
        async () => {
          for (const { name } of PROJECTION_DEFINITIONS) if (((await liveCheckpoint(sql, name)) ?? '') < head) return false;
          return true;
        },
        { what: 'the rebuild to apply the whole log', timeoutMs: 60_000 },
      );
      return await dumpReadModels(sql);
    } finally {
      await projector.stop();
      await signals.close();
      await sql.close();
    }
  }
});

/** The first `count` events of an SSE stream, as `id`, `event` and the parts of `data` the log has. */
async function sseEvents(url: string, token: string, count: number) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 30_000);
  const events: Array<{ id: string; type: string; eventId: unknown; revision: unknown; data: unknown }> = [];
  try {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
    expect(response.status).toBe(200);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body!) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const fields = new Map<string, string>();
        for (const line of buffer.slice(0, end).split('\n')) {
          const colon = line.indexOf(':');
          if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
        }
        buffer = buffer.slice(end + 2);
        if (!fields.has('event')) continue;
        const data = JSON.parse(fields.get('data')!) as { eventId: unknown; revision: unknown; data: unknown };
        events.push({ id: fields.get('id')!, type: fields.get('event')!, eventId: data.eventId, revision: data.revision, data: data.data });
        if (events.length === count) return events;
      }
    }
    return events;
  } catch (error) {
    if (controller.signal.aborted) return events;
    throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
