import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { startKafkaBroker, type KafkaBroker } from '../support/kafka-broker.js';
import { createTestDatabase, startPostgresServer, type PostgresServer } from '../support/postgres-server.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Health and unavailability on the full stack, with a Postgres and a broker of this suite's own
 * that it stops: readiness names what is down, a request that needs it answers 503 and writes
 * nothing, and both recover without restarting Flostra.
 */
describe('dependencies stopped under a running Flostra', () => {
  let postgres: PostgresServer;
  let broker: KafkaBroker;
  let bus: KafkaBus;
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    [postgres, broker] = await Promise.all([startPostgresServer({ reuseExisting: false }), startKafkaBroker({ reuseExisting: false })]);
    bus = new KafkaBus({ brokers: broker.brokers, clientId: 'dependency-faults', logger: createLogger({ level: 'silent' }) });
    t = await startTestApp('postgres', {}, { bus, worker: true, databaseUrl: await createTestDatabase('faults', postgres.url) });
    api = client(t.url);
    const graph = { nodes: [{ id: 'a', type: 'noop' }], edges: [] };
    expect((await api.put('/v1/workspaces/ws-a/workflows/steady', { token: TOKENS.adminA, body: graph })).status).toBe(201);
  }, 180_000);
  afterAll(async () => {
    await t?.close();
    await bus?.close();
    await broker?.stop();
    await postgres?.stop();
  }, 60_000);

  const ready = async () => {
    const response = await api.get('/health/ready');
    return { status: response.status, body: response.body as { status: string; checks: Record<string, string> } };
  };
  const start = (key: string) =>
    api.post('/v1/workspaces/ws-a/workflows/steady/executions', { token: TOKENS.operatorA, body: {}, headers: { 'Idempotency-Key': key } });
  const succeeds = (executionId: string) =>
    eventually(
      async () => {
        const view = await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA });
        return view.status === 200 && view.body.status === 'succeeded';
      },
      { what: `execution ${executionId} to succeed`, timeoutMs: 120_000, intervalMs: 200 },
    );
  const executionsOfWorkflow = async () =>
    (await api.get('/v1/workspaces/ws-a/executions?workflow=steady&limit=100', { token: TOKENS.viewerA })).body.executions as unknown[];

  it('answers ready with every dependency up', async () => {
    expect(await ready()).toEqual({ status: 200, body: { status: 'ok', checks: { eventStore: 'up', readModels: 'up', kafka: 'up' } } });
  });

  it('Postgres stopped: ready names it, a start answers 503 unavailable and writes nothing; all recovers once it is back', async () => {
    const before = (await executionsOfWorkflow()).length;
    await postgres.restart({
      whileDown: async () => {
        await eventually(async () => {
          expect(await ready()).toEqual({
            status: 503,
            body: { status: 'unavailable', checks: { eventStore: 'down', readModels: 'down', kafka: 'up' } },
          });
        });
        const refused = await start('while-postgres-is-down');
        expect(refused.status).toBe(503);
        expect(refused.headers.get('content-type')).toContain('application/problem+json');
        expect(refused.body).toMatchObject({ status: 503, code: 'unavailable' });
      },
    });
    await eventually(async () => expect((await ready()).status).toBe(200), { what: 'ready again', timeoutMs: 60_000 });
    // Nothing of the refused start was written: the same key now starts the execution, once.
    const started = await eventually(async () => {
      const answer = await start('while-postgres-is-down');
      return answer.status === 201 && answer;
    });
    await succeeds(started.body.executionId);
    expect(await executionsOfWorkflow()).toHaveLength(before + 1);
  }, 180_000);

  it('the broker stopped: ready names it, starts still succeed (the log is the outbox) and run once it is back', async () => {
    let executionId = '';
    await broker.restart({
      whileDown: async () => {
        await eventually(
          async () => {
            expect(await ready()).toEqual({
              status: 503,
              body: { status: 'unavailable', checks: { eventStore: 'up', readModels: 'up', kafka: 'down' } },
            });
          },
          { what: 'ready to say Kafka is down', timeoutMs: 60_000 },
        );
        const started = await start('while-kafka-is-down');
        expect(started.status).toBe(201);
        executionId = started.body.executionId;
      },
    });
    await eventually(async () => expect((await ready()).status).toBe(200), { what: 'ready again', timeoutMs: 90_000 });
    await succeeds(executionId);
  }, 240_000);
});
