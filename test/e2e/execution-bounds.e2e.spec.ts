import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ExecutionsReadModel } from '../../projections/executions.read-model.js';
import { executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start, view } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Promise 13: one execution cannot grow without bound. On the embedded stack:
 * forty signals of 900 KiB, twenty heartbeats of 900 KiB progress, a history filled up, and
 * viewers of a large execution while /health/live is asked.
 */

const KIB = 1024;

/** charge (a task on `queue`, handed out with the start) → gate (waits for a signal "go"). */
const bounded = (queue: string) => ({
  nodes: [
    { id: 'charge', type: 'task', config: { queue, heartbeatTimeoutMs: 600_000 } },
    { id: 'gate', type: 'wait_signal', config: { name: 'go' } },
  ],
  edges: [{ from: 'charge', to: 'gate' }],
});

const text = (bytes: number) => 'x'.repeat(bytes);

describe('the bounds of one execution', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {
      FLOSTRA_EXECUTION_MAX_KEPT_SIGNALS: '5',
      FLOSTRA_TASK_PROGRESS_KEPT: '3',
      FLOSTRA_TASK_PROGRESS_MAX_BYTES: String(256 * KIB),
      FLOSTRA_EXECUTION_MAX_HISTORY_BYTES: String(2 * 1024 * KIB),
      FLOSTRA_HISTORY_PAGE_MAX_BYTES: String(512 * KIB),
    });
    api = client(t.url);
    await publish(api, 'bounded', bounded('bounds'));
    await publish(api, 'progress', bounded('progress'));
    await publish(api, 'filled', bounded('filled'));
  });
  afterAll(() => t?.close());

  const streamLength = async (executionId: string) => (await t.store.readStream(executionStreamId(executionId))).length;
  const signal = (executionId: string, payload: unknown) =>
    api.post(`/v1/executions/${executionId}/signals/go`, { token: TOKENS.operatorA, body: { payload } });
  const poll = async (queue: string) => {
    const res = await api.post(`/v1/workspaces/ws-a/task-queues/${queue}/poll`, {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'p-1', waitMs: 5_000 },
    });
    expect(res.status).toBe(200);
    return res.body as { taskId: string; executionId: string; fencingToken: number };
  };
  const heartbeat = (task: { taskId: string; fencingToken: number }, progress: unknown) =>
    api.post(`/v1/tasks/${task.taskId}/heartbeat`, {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'p-1', fencingToken: task.fencingToken, progress },
    });

  it('forty signals of 900 KiB: the first is kept, each later one is refused 413 and appends nothing', async () => {
    const { executionId } = await start(api, 'bounded');
    expect((await signal(executionId, text(900 * KIB))).status).toBe(202);
    const length = await streamLength(executionId);
    const head = await t.store.headPosition();
    for (let i = 1; i < 40; i++) {
      const refused = await signal(executionId, text(900 * KIB));
      expect(refused.status).toBe(413);
      expect(refused.body).toMatchObject({ code: 'signals_too_large', limitBytes: 1024 * KIB });
    }
    expect(await streamLength(executionId)).toBe(length);
    expect(await t.store.headPosition()).toBe(head);
    // The view shows the kept signal, its payload summarized: the whole of it is in the history.
    await t.waitForProjections();
    const shown = await view(api, executionId);
    expect(shown.signals).toHaveLength(1);
    expect(shown.signals[0].payload).toEqual({ $omitted: { bytes: 900 * KIB + 2 } });
  });

  it('a signal beyond the count of kept signals is refused 409 too_many_signals and appends nothing', async () => {
    const { executionId } = await start(api, 'bounded');
    for (let i = 0; i < 5; i++) expect((await signal(executionId, { i })).status).toBe(202);
    const length = await streamLength(executionId);
    const refused = await signal(executionId, { i: 5 });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'too_many_signals', limit: 5 });
    expect(await streamLength(executionId)).toBe(length);
  });

  it('a task keeps its last three progress entries; progress of 900 KiB is refused 413 and appends nothing', async () => {
    const { executionId } = await start(api, 'progress');
    const task = await poll('progress');
    expect(task.executionId).toBe(executionId);
    for (let step = 1; step <= 20; step++) expect((await heartbeat(task, { step })).status).toBe(200);
    const length = await streamLength(executionId);
    for (let i = 0; i < 20; i++) {
      const refused = await heartbeat(task, { log: text(900 * KIB) });
      expect(refused.status).toBe(413);
      expect(refused.body).toMatchObject({ code: 'progress_too_large', limitBytes: 256 * KIB });
    }
    expect(await streamLength(executionId)).toBe(length);
    await t.waitForProjections();
    const [shown] = (await view(api, executionId)).tasks;
    expect(shown.progress).toEqual({ step: 20 });
    expect(shown.recentProgress.map((entry: { progress: unknown }) => entry.progress)).toEqual([{ step: 18 }, { step: 19 }, { step: 20 }]);
  });

  it('a full history refuses the next command 409 execution_full and appends nothing; a cancel still ends the execution', async () => {
    const { executionId } = await start(api, 'filled');
    const task = await poll('filled');
    let answer = await heartbeat(task, { log: text(200 * KIB) });
    for (let beats = 1; answer.status === 200; beats++) {
      expect(beats).toBeLessThan(12); // 2 MiB hold ten of them
      answer = await heartbeat(task, { log: text(200 * KIB) });
    }
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({ code: 'execution_full', limitBytes: 2 * 1024 * KIB });
    const length = await streamLength(executionId);
    const another = await signal(executionId, text(200 * KIB));
    expect(another.status).toBe(409);
    expect(another.body).toMatchObject({ code: 'execution_full' });
    expect(await streamLength(executionId)).toBe(length);

    const cancelled = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: { reason: 'full' } });
    expect(cancelled.status).toBe(202);
    await eventually(async () => (await view(api, executionId)).status === 'cancelled', { what: 'the full execution to be cancelled' });

    // Its history comes in pages of about 512 KiB, however many events a page may hold.
    await t.waitForProjections();
    const pages: { events: { type: string; data: unknown }[]; nextCursor: string | null }[] = [];
    let after = '';
    do {
      const res = await api.get(`/v1/executions/${executionId}/history?limit=500${after}`, { token: TOKENS.viewerA });
      expect(res.status).toBe(200);
      pages.push(res.body);
      after = res.body.nextCursor === null ? '' : `&after=${encodeURIComponent(res.body.nextCursor)}`;
    } while (after !== '');
    expect(pages.length).toBeGreaterThanOrEqual(4);
    for (const page of pages) {
      const bytes = page.events.map((e) => Buffer.byteLength(JSON.stringify(e.data)));
      expect(bytes.slice(0, -1).reduce((sum, n) => sum + n, 0)).toBeLessThan(512 * KIB);
    }
    expect(pages.flatMap((page) => page.events)).toHaveLength(await streamLength(executionId));
  });
});

describe('the view of a large execution', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', { FLOSTRA_EXECUTION_MAX_KEPT_SIGNAL_BYTES: String(16 * 1024 * KIB) });
    api = client(t.url);
    await publish(api, 'bounded', bounded('bounds'));
  });
  afterAll(() => t?.close());

  it('does not hold /health/live: one asked while the view is built is answered before the view', async () => {
    const { executionId } = await start(api, 'bounded');
    for (let i = 0; i < 12; i++) {
      const sent = await api.post(`/v1/executions/${executionId}/signals/go`, {
        token: TOKENS.operatorA,
        body: { payload: text(900 * KIB) },
      });
      expect(sent.status).toBe(202);
    }
    await t.waitForProjections();

    // Observes the moment the view's document has been read (it is then built and answered): the
    // health request goes out then. The read model itself answers as always.
    const readModel = t.app.get(ExecutionsReadModel);
    const read = readModel.get.bind(readModel);
    const order: string[] = [];
    const asked: { health?: Promise<void> } = {};
    readModel.get = async (id: string) => {
      const document = await read(id);
      if (id === executionId && asked.health === undefined)
        asked.health = fetch(`${t.url}/health/live`).then(async (res) => {
          await res.text();
          order.push(`health ${res.status}`);
        });
      return document;
    };
    try {
      const viewed = await fetch(`${t.url}/v1/executions/${executionId}?consistency=eventual`, {
        headers: { authorization: `Bearer ${TOKENS.viewerA}` },
      });
      order.push(`view ${viewed.status}`);
      const body = (await viewed.json()) as { signals: { payload: unknown }[] };
      await asked.health;
      expect(order).toEqual(['health 200', 'view 200']);
      expect(body.signals).toHaveLength(12);
      for (const kept of body.signals) expect(kept.payload).toEqual({ $omitted: { bytes: 900 * KIB + 2 } });
    } finally {
      readModel.get = read;
    }
  });
});
