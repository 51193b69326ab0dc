import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { BatchInfo } from '../../src/projector/projection-runner.js';
import { eventually, sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { claim, publish } from '../support/scenario.js';
import { ALL_STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { dumpReadModels, expectReadModelsEqualTheLog } from './support/projection-harness.js';

const attempt = (e: string, a: string, verb: string) => `/v1/executions/${e}/attempts/${a}/${verb}`;

/** Events per rebuild batch: few, so the rebuild spans many transactions. */
const REBUILD_BATCH_SIZE = 20;

/**
 * Promise 9 (docs/architecture.md) while the system serves traffic, and promise 8's premise: executions are started,
 * claimed and completed over HTTP throughout a rebuild of both read models; nothing is lost,
 * reads never fail, and every timeline position (an SSE id) stays what it was.
 */
describe.each(ALL_STORE_KINDS)('a rebuild under live load on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  /** Lifecycles that finished without a failure. */
  let finished = 0;
  /** Holds the rebuild's batches back until the load has made progress while it runs. */
  let overlap: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    // Small rebuild batches stretch the rebuild over many transactions interleaved with the load,
    // and the first of them waits for lifecycles to finish meanwhile, however slow the host. The
    // wait stops for good at the first short batch: the rebuild has caught up with the log and
    // may have asked the live version to stand still for the switch, which the lifecycles' reads
    // wait on, so holding the rebuild there would hold them too.
    let caughtUp = false;
    const stretch = async (info: BatchInfo) => {
      if (info.role !== 'building') return;
      await sleep(30);
      if (info.events < REBUILD_BATCH_SIZE) caughtUp = true;
      if (!caughtUp) await overlap?.();
    };
    t = await startTestApp(kind, {}, { projector: { rebuildBatchSize: REBUILD_BATCH_SIZE, hooks: { afterCommit: stretch } } });
    api = client(t.url);
    await publish(api, 'chain');
  });
  afterAll(() => t?.close());

  /** One execution through its life over HTTP; every read must answer, and reflect the write before it. */
  async function lifecycle(n: number, failures: string[]): Promise<void> {
    const started = await api.post('/v1/workspaces/ws-a/workflows/chain/executions', { token: TOKENS.operatorA, body: { input: { n } } });
    if (started.status !== 201) return void failures.push(`start ${started.status}`);
    const { executionId } = started.body;
    const view = await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA });
    if (view.status !== 200 || view.body.position !== started.body.position)
      return void failures.push(`view ${view.status} ${JSON.stringify(view.body)}`);
    const attemptId = view.body.attempts[0].attemptId;
    const claimed = await claim(api, executionId, attemptId, `w-${n % 3}`);
    if (claimed.status !== 200) return void failures.push(`claim ${claimed.status}`);
    const fence = { workerId: `w-${n % 3}`, fencingToken: claimed.body.fencingToken };
    await api.post(attempt(executionId, attemptId, 'heartbeat'), { token: TOKENS.worker, body: fence });
    const outcome = n % 4 === 0 ? { outcome: 'failed', error: { code: 'boom', message: 'load' } } : { outcome: 'succeeded', output: { n } };
    const done = await api.post(attempt(executionId, attemptId, 'complete'), { token: TOKENS.worker, body: { ...fence, ...outcome } });
    if (done.status !== 200) return void failures.push(`complete ${done.status}`);
    const history = await api.get(`/v1/executions/${executionId}/history`, { token: TOKENS.viewerA });
    if (history.status !== 200 || history.body.events.at(-1).position !== done.body.position)
      return void failures.push(
        `history ${history.status}${history.status === 200 ? '' : ` ${JSON.stringify(history.body).slice(0, 300)}`}`,
      );
    finished++;
  }

  it('loses nothing, keeps every position, and switches both read models', async () => {
    const failures: string[] = [];
    for (let n = 0; n < 15; n++) await lifecycle(n, failures);
    await t.waitForProjections();
    const timelineBefore = (await dumpReadModels(t.readModelSql)).timeline.map((r) => [r.position, r.event_id]);

    let running = true;
    let count = 15;
    const load = Array.from({ length: 4 }, async () => {
      while (running) await lifecycle(count++, failures);
    });
    await sleep(300);
    const finishedBeforeRebuild = finished;
    overlap = async () => {
      await eventually(() => finished >= finishedBeforeRebuild + 4 || failures.length > 0, {
        what: () => `lifecycles to finish during the rebuild (${finished - finishedBeforeRebuild} so far)`,
        timeoutMs: 60_000,
      });
    };
    const rebuilds = await Promise.all(
      ['executions', 'timeline'].map((name) => api.post(`/v1/admin/projections/${name}/rebuild`, { token: TOKENS.systemAdmin })),
    );
    expect(rebuilds.map((r) => r.status)).toEqual([202, 202]);

    // Watch the rebuild through the admin API until both switched, while the load goes on. (A
    // small rebuild may start and finish between two polls, so seeing it mid-way is not required.)
    // The rebuild chases a head that the load keeps moving: bounded in time, not in polls.
    let last: unknown;
    await eventually(
      async () => {
        const status = await api.get('/v1/admin/projections', { token: TOKENS.systemAdmin });
        expect(status.status).toBe(200);
        last = status.body;
        const byName = Object.fromEntries(status.body.projections.map((p: { name: string }) => [p.name, p]));
        return rebuilds.every((r, k) => byName[['executions', 'timeline'][k]].lastRebuild?.rebuildId === r.body.rebuildId);
      },
      { what: () => `the rebuilds to finish: ${JSON.stringify(last)}`, timeoutMs: 150_000, intervalMs: 50 },
    );
    await sleep(300);
    running = false;
    await Promise.all(load);

    expect(failures).toEqual([]);
    expect(finished - finishedBeforeRebuild).toBeGreaterThanOrEqual(4);
    await t.waitForProjections();
    await expectReadModelsEqualTheLog(t.store, t.readModelSql);
    const after = await dumpReadModels(t.readModelSql);
    const positions = new Map(after.timeline.map((r) => [r.event_id, r.position]));
    expect(timelineBefore.map(([, eventId]) => [positions.get(eventId), eventId])).toEqual(timelineBefore);
    expect(after.executions).toHaveLength(count);
    const { rows } = await t.readModelSql.query<{ name: string; live_version: number }>(
      'select name, live_version from projector.projections order by name',
    );
    expect(rows).toEqual([
      { name: 'audit', live_version: 1 },
      { name: 'executions', live_version: 2 },
      { name: 'schedules', live_version: 1 },
      { name: 'timeline', live_version: 2 },
    ]);
  }, 240_000);
});
