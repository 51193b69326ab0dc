import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import { createWorker } from '../../src/worker/runtime/create-worker.js';
import type { WorkerService } from '../../src/worker/runtime/worker.service.js';
import { eventually, sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const quiet = createLogger({ level: 'silent' });
type Event = { type: string; data: Record<string, unknown> };

/**
 * Durable timers and signals on the full stack (Postgres, Kafka, every role, a worker of its own):
 * the control plane and the worker stop while executions wait on delays and on signals, and start
 * again on the same database; every execution then finishes once, each timer fired once (late,
 * and saying so), each signal taken once.
 */
describe('timers and signals across a restart (Postgres and Kafka)', () => {
  let t: TestApp;
  let api: ApiClient;
  let bus: KafkaBus;
  let worker: WorkerService | undefined;

  beforeAll(async () => {
    bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'timer-restart', logger: quiet });
    t = await startTestApp('postgres', {}, { bus });
    api = client(t.url);
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
    await bus?.close();
  });

  async function startWorker() {
    worker = createWorker({
      bus,
      apiUrl: t.url,
      token: TOKENS.worker,
      logger: quiet,
      concurrency: 8,
      egressAllow: [],
      groupId: `timer-workers-${randomUUID()}`,
    });
    await worker.start();
  }
  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
  const status = async (executionId: string) =>
    (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body.status as string;
  async function publishAndStart(name: string, graph: object, count: number): Promise<string[]> {
    expect([200, 201]).toContain((await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph })).status);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const res = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: {} });
      expect(res.status).toBe(201);
      ids.push(res.body.executionId as string);
    }
    return ids;
  }

  it('every execution waiting on a delay or a signal finishes once after the restart', async () => {
    await startWorker();
    const delays = await publishAndStart(
      'restart-delay',
      {
        nodes: [
          { id: 'pause', type: 'delay', config: { ms: 2_000 } },
          { id: 'after', type: 'noop' },
        ],
        edges: [{ from: 'pause', to: 'after' }],
      },
      5,
    );
    const signalled = await publishAndStart(
      'restart-signal',
      {
        nodes: [
          { id: 'gate', type: 'wait_signal', config: { name: 'go' } },
          { id: 'after', type: 'transform', config: { expression: 'nodes.gate' } },
        ],
        edges: [{ from: 'gate', to: 'after' }],
      },
      5,
    );
    for (const id of [...delays, ...signalled])
      await eventually(async () => (await status(id)) === 'waiting', { what: `${id} to wait`, timeoutMs: 60_000 });

    // Everything stops while they wait; the delays fall due meanwhile.
    await worker?.stop();
    worker = undefined;
    const databaseUrl = t.databaseUrl!;
    await t.close();
    await sleep(2_500);
    t = await startTestApp('postgres', {}, { bus, databaseUrl });
    api = client(t.url);
    await startWorker();

    for (const id of signalled) {
      const sent = await api.post(`/v1/executions/${id}/signals/go`, {
        token: TOKENS.operatorA,
        body: { payload: { id } },
        headers: { 'idempotency-key': `go-${id}` },
      });
      expect(sent.status).toBe(202);
    }
    for (const id of [...delays, ...signalled])
      await eventually(async () => (await status(id)) === 'succeeded', { what: `${id} to succeed`, timeoutMs: 90_000 });

    for (const id of delays) {
      const events = await history(id);
      const fired = events.filter((e) => e.type === 'TimerFired');
      expect(fired).toHaveLength(1);
      expect(fired[0].data['lateByMs']).toEqual(expect.any(Number));
      expect(events.filter((e) => e.type === 'ExecutionSucceeded')).toHaveLength(1);
    }
    for (const id of signalled) {
      const events = await history(id);
      expect(events.filter((e) => e.type === 'SignalDelivered')).toHaveLength(1);
      expect(events.filter((e) => e.type === 'ExecutionSucceeded')).toHaveLength(1);
      expect(events.find((e) => e.type === 'ExecutionSucceeded')!.data['output']).toEqual({ after: { id } });
    }
  }, 240_000);
});
