import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APP_READY, assertBuilt, spawnAppProcess, writeTestTokensFile, type AppProcess } from '../support/app-process.js';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually, sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { createTestDatabase, freePort } from '../support/postgres-server.js';
import { TOKENS } from '../support/test-app.js';

type Event = { type: string; data: Record<string, unknown> };

/**
 * The dispatcher hands dispatches to the worker of its own process in memory
 * (FLOSTRA_WORKER_DISPATCH, `auto` when one process runs both roles) while it has room: its one
 * slot, and one more waiting. The process is SIGKILLed while the second dispatch it handed over
 * waits for the slot, unclaimed, in memory only: after a restart the attempt is dispatched again,
 * from the log, and runs once. Real PostgreSQL and Kafka, every role in one process, as `full` runs.
 */
describe('a process SIGKILLed with a dispatch handed over in memory and not yet claimed', () => {
  const barrier = new BarrierServer();
  const dir = mkdtempSync(join(tmpdir(), 'flostra-hand-over-kill-'));
  let env: Record<string, string>;
  let api: ApiClient;
  let app: AppProcess | undefined;

  beforeAll(async () => {
    assertBuilt();
    await barrier.start();
    const apiUrl = `http://127.0.0.1:${await freePort()}`;
    api = client(apiUrl);
    env = {
      EVENT_STORE_URL: await createTestDatabase('hand_over_kill'),
      KAFKA_BROKERS: testKafkaBrokers().join(','),
      FLOSTRA_TOKENS_FILE: writeTestTokensFile(),
      FLOSTRA_WORKER_TOKEN: TOKENS.worker,
      FLOSTRA_WORKER_CONCURRENCY: '1',
      FLOSTRA_EGRESS_ALLOW: '127.0.0.1/32',
      FLOSTRA_DATA_DIR: dir,
      PORT: new URL(apiUrl).port,
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    // Stopped cleanly, so that it leaves its consumer groups: later suites share the broker.
    await app?.signal('SIGTERM');
    await barrier.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const history = async (executionId: string): Promise<Event[]> =>
    (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.viewerA })).body.events;
  const status = async (executionId: string) =>
    (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body.status as string;
  /** How many dispatches the process has sent, on the bus or handed over (`flostra_dispatch_lag_seconds`). */
  const dispatchedCount = async (): Promise<number> => {
    const scrape = String((await api.get('/metrics', { token: TOKENS.metrics })).body);
    const line = scrape.split('\n').find((l) => l.startsWith('flostra_dispatch_lag_seconds_count'));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };

  async function start(name: string): Promise<string> {
    const res = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, { token: TOKENS.operatorA, body: {} });
    expect(res.status).toBe(201);
    return res.body.executionId as string;
  }

  it('dispatches it again after the restart, and it runs once', async () => {
    app = await spawnAppProcess(env, APP_READY, 90_000);
    for (const [name, graph] of Object.entries({
      // Holds the worker's one slot; its lease runs out soon after the kill.
      held: {
        nodes: [{ id: 'h', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/held` } }],
        edges: [],
        timeouts: { leaseMs: 2_000 },
      },
      waiting: { nodes: [{ id: 'w', type: 'noop' }], edges: [] },
    })) {
      const put = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
      expect(put.status).toBe(201);
    }
    const held = await start('held');
    await eventually(() => expect(barrier.heldCount('held')).toBe(1));
    const before = await dispatchedCount();
    const waiting = await start('waiting');
    // The dispatcher has handed it to the worker, whose slot the held attempt keeps.
    await eventually(async () => expect(await dispatchedCount()).toBe(before + 1));
    expect(await status(waiting)).toBe('queued');

    // Time for the dispatcher to store its checkpoint, which must stay before that dispatch.
    await sleep(2_500);
    expect(await status(waiting)).toBe('queued');
    await app.signal('SIGKILL');
    app = undefined;

    barrier.release('held');
    app = await spawnAppProcess(env, APP_READY, 90_000);
    await eventually(async () => expect(await status(waiting)).toBe('succeeded'), { timeoutMs: 60_000 });
    // The held attempt's lease ran out while the process was down: the watchdog settles it (its
    // workflow has no retries).
    await eventually(async () => expect(await status(held)).toBe('timed_out'), { timeoutMs: 60_000 });
    const types = (await history(waiting)).map((e) => e.type);
    expect(types.filter((t) => t === 'AttemptClaimed')).toHaveLength(1);
    expect(types.filter((t) => t === 'NodeSucceeded')).toHaveLength(1);
  }, 240_000);
});
