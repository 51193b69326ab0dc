import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { historyOf, liveOf, runExecution, seededRandom, startAndClaim } from './live-scenario.js';
import { SseStream } from './sse-test-client.js';

const EXECUTIONS = 10;
const BEATS = 10;
const EXECUTION_CLIENTS = 20;
const WORKSPACE_CLIENTS = 10;
/** However fast the workload runs, every client reconnects at least this many times minus one. */
const MIN_CONNECTIONS = 3;

interface ClientRun {
  ids: string[];
  connections: number;
}

/**
 * One client that keeps dropping its connection at a random point (after a few messages, after
 * a few milliseconds, or at once) and reconnects with Last-Event-ID, until it has `lastId()`.
 * Only complete messages count, as in a browser: a message cut in half is not dispatched.
 */
async function churningClient(
  url: string,
  firstCursor: string | undefined,
  lastId: () => string | null,
  random: () => number,
): Promise<ClientRun> {
  const run: ClientRun = { ids: [], connections: 0 };
  const done = () => {
    const last = lastId();
    return last !== null && run.ids.includes(last);
  };
  let cursor = firstCursor;
  while (!done() || run.connections < MIN_CONNECTIONS) {
    const stream = await SseStream.open(url, { token: TOKENS.viewerA, lastEventId: cursor });
    run.connections++;
    expect(stream.status).toBe(200);
    const quota = Math.floor(random() * 5);
    await Promise.race([
      stream.until((s) => s.messages.length >= quota || (lastId() !== null && s.ids.includes(lastId()!))).catch(() => undefined),
      sleep(random() * 40),
    ]);
    stream.close();
    run.ids.push(...stream.ids);
    if (stream.lastEventId !== '') cursor = stream.lastEventId;
    await sleep(random() * 10);
  }
  return run;
}

describe.each(STORE_KINDS)('SSE torture on %s: clients churning while executions run', (kind) => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
    // Heartbeats wake idle clients often, so every one re-checks whether it is done.
    liveOf(t.app).tune({ heartbeatMs: 50, retryMs: 10 });
  });
  afterAll(() => t?.close());

  it('every client ends with the complete history, each event once, in order', async () => {
    const random = seededRandom(kind === 'pglite' ? 1 : 2);
    const marker = await runExecution(api, 'chain', 0);
    const markerPosition = (await historyOf(api, marker)).at(-1)!.position;

    const lastOfExecution = new Map<string, string>();
    let lastOfWorkspace: string | null = null;
    const executions: Promise<string>[] = [];
    const clients: Promise<{ executionId: string | null; run: ClientRun }>[] = [];

    for (let w = 0; w < WORKSPACE_CLIENTS; w++) {
      const url = `${t.url}/v1/workspaces/ws-a/events?lastEventId=${encodeURIComponent(markerPosition)}`;
      clients.push(churningClient(url, undefined, () => lastOfWorkspace, random).then((run) => ({ executionId: null, run })));
    }
    for (let e = 0; e < EXECUTIONS; e++) {
      const started = startAndClaim(api, 'chain');
      executions.push(
        started.then(async (execution) => {
          for (let b = 0; b < BEATS; b++) {
            await sleep(random() * 40);
            await execution.heartbeat();
          }
          await execution.complete();
          lastOfExecution.set(execution.executionId, (await historyOf(api, execution.executionId)).at(-1)!.position);
          return execution.executionId;
        }),
      );
      for (let c = e; c < EXECUTION_CLIENTS; c += EXECUTIONS) {
        clients.push(
          started.then(async ({ executionId }) => {
            await sleep(random() * 30);
            const url = `${t.url}/v1/executions/${executionId}/events`;
            return { executionId, run: await churningClient(url, undefined, () => lastOfExecution.get(executionId) ?? null, random) };
          }),
        );
      }
    }
    const executionIds = await Promise.all(executions);
    const histories = new Map(await Promise.all(executionIds.map(async (id) => [id, await historyOf(api, id)] as const)));
    const workspacePositions = [...histories.values()]
      .flat()
      .map((e) => e.position)
      .sort();
    lastOfWorkspace = workspacePositions.at(-1)!;

    const results = await Promise.all(clients);
    let reconnections = 0;
    for (const { executionId, run } of results) {
      const expected = executionId === null ? workspacePositions : histories.get(executionId)!.map((e) => e.position);
      // Equal to /history, hence strictly increasing: nothing missing, nothing repeated across reconnects.
      expect(run.ids).toEqual(expected);
      reconnections += run.connections - 1;
    }
    expect(reconnections).toBeGreaterThanOrEqual(results.length * (MIN_CONNECTIONS - 1));
    expect(liveOf(t.app).streams.stats()).toMatchObject({ closed: { slow_client: 0, failed: 0 } });
  });
});
