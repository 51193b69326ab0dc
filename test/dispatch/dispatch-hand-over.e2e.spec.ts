import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { TOPICS } from '../../src/core/bus.port.js';
import { createLogger } from '../../src/core/logger.js';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { workspaceA } from '../support/workspace-a.js';
import { recordTopic } from './support/process-fixture.js';

type Stack = 'embedded' | 'full';

/**
 * The dispatcher hands dispatches to the worker of its own process in memory
 * (FLOSTRA_WORKER_DISPATCH=in-process): what the worker takes never crosses the bus. On Kafka it
 * takes what fits its slots and as many again waiting, and the rest go on the bus for any worker
 * (this one included); on the in-process bus, which no other worker reads, it takes everything.
 * Either way the worker runs no more attempts at once than its concurrency.
 */
describe.each<Stack>(['embedded', 'full'])('dispatches handed over in process, %s', (stack) => {
  const barrier = new BarrierServer();
  const logger = createLogger({ level: 'silent' });
  let t: TestApp | undefined;
  let bus: KafkaBus | undefined;
  let api: ApiClient;

  beforeAll(() => barrier.start());
  afterAll(() => barrier.stop());
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await bus?.close();
    bus = undefined;
  });

  async function boot(concurrency: number) {
    const env = { FLOSTRA_WORKER_DISPATCH: 'in-process', FLOSTRA_WORKER_TRANSPORT: 'in-process' };
    const worker = { concurrency, egressAllow: ['127.0.0.1/32'] };
    if (stack === 'full') {
      bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'hand-over-test', logger });
      t = await startTestApp('postgres', env, { worker, bus });
    } else {
      t = await startTestApp('pglite', env, { worker });
    }
    api = client(t.url);
  }

  it('runs executions to their end without their dispatches crossing the bus', async () => {
    await boot(4);
    const onTheBus = await recordTopic(t!.bus, TOPICS.dispatch);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        await workspaceA(api).publishAndStart('noop-pair', {
          nodes: [
            { id: 'a', type: 'noop' },
            { id: 'b', type: 'noop' },
          ],
          edges: [{ from: 'a', to: 'b' }],
        }),
      );
      await workspaceA(api).untilStatus(ids[i], ['succeeded']);
    }
    expect(onTheBus.values().filter((m) => ids.includes(String(m.executionId)))).toEqual([]);
    await onTheBus.stop();
  });

  /** How many dispatches the app has sent, on the bus or handed over (`flostra_dispatch_lag_seconds`). */
  const dispatchedCount = async (): Promise<number> => {
    const line = String((await api.get('/metrics', { token: TOKENS.metrics })).body)
      .split('\n')
      .find((l) => l.startsWith('flostra_dispatch_lag_seconds_count'));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };

  it('runs no more at once than its concurrency, and leaves on the bus what does not fit', async () => {
    await boot(1);
    const onTheBus = await recordTopic(t!.bus, TOPICS.dispatch);
    const before = await dispatchedCount();
    const hold = `hold-${stack}`;
    const graph = { nodes: [{ id: 'h', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/${hold}` } }], edges: [] };
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await workspaceA(api).publishAndStart('held', graph));
    const sent = () => onTheBus.values().filter((m) => ids.includes(String(m.executionId)));
    // All four dispatched: one holds the slot, and one waits for it; on Kafka the other two went
    // on the bus (and wait in this worker's consumer).
    await eventually(async () => expect(await dispatchedCount()).toBe(before + 4));
    if (stack === 'full') await eventually(() => expect(sent()).toHaveLength(2));
    await eventually(() => expect(barrier.heldCount(hold)).toBe(1));
    const statuses = await Promise.all(
      ids.map(async (id) => (await api.get(`/v1/executions/${id}`, { token: TOKENS.viewerA })).body.status),
    );
    expect(statuses.filter((status) => status === 'running')).toHaveLength(1);
    barrier.release(hold);
    for (const id of ids) expect((await workspaceA(api).untilStatus(id, ['succeeded', 'failed'])).status).toBe('succeeded');
    // Only this worker reads the in-process bus: it took every dispatch.
    if (stack === 'embedded') expect(sent()).toEqual([]);
    expect(barrier.hits.get(hold)).toBe(4);
    await onTheBus.stop();
  });
});
