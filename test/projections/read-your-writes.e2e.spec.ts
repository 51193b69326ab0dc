import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Projector } from '../../src/projector/projector.js';
import { ReadModelSettings } from '../../src/projector/projector.settings.js';
import { sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { claim, publish, start } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Queries read asynchronous read models, yet a client reads its own writes: by default a query
 * waits (bounded) until the read model reflects the log as it was when the query arrived; a
 * client may name a position instead (`?minPosition=`, `X-Flostra-Min-Position`), or opt out
 * (`?consistency=eventual`). A read model that cannot catch up in time answers 503, never stale.
 */
describe.each(STORE_KINDS)('read-your-writes on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  let slow = false;

  beforeAll(async () => {
    t = await startTestApp(
      kind,
      {},
      { projector: { liveBatchSize: 1, hooks: { afterCommit: async () => void (slow && (await sleep(100))) } } },
    );
    api = client(t.url);
    await publish(api, 'chain');
  });
  afterAll(() => t?.close());

  const viewer = { token: TOKENS.viewerA };

  it('shows every acknowledged write by default, even while the projector lags', async () => {
    slow = true;
    try {
      for (let i = 0; i < 3; i++) {
        const started = await api.post('/v1/workspaces/ws-a/workflows/chain/executions', { token: TOKENS.operatorA, body: {} });
        const view = await api.get(`/v1/executions/${started.body.executionId}`, viewer);
        expect(view.body).toMatchObject({ status: 'queued', position: started.body.position });
        const claimed = await claim(api, started.body.executionId, view.body.attempts[0].attemptId);
        expect(claimed.status).toBe(200);
        expect((await api.get(`/v1/executions/${started.body.executionId}`, viewer)).body.status).toBe('running');
        const history = await api.get(`/v1/executions/${started.body.executionId}/history`, viewer);
        expect(history.body.events.map((e: { type: string }) => e.type)).toEqual([
          'ExecutionStarted',
          'AttemptScheduled',
          'AttemptClaimed',
        ]);
        const list = await api.get('/v1/workspaces/ws-a/executions?limit=1', viewer);
        expect(list.body.executions[0]).toMatchObject({ executionId: started.body.executionId, status: 'running' });
      }
    } finally {
      slow = false;
    }
  });

  describe('while the projector is stopped', () => {
    let executionId: string;
    let cancelledAt: string;

    beforeAll(async () => {
      ({ executionId } = await start(api, 'chain'));
      await t.app.get(Projector).stop();
      t.app.get(ReadModelSettings).tune({ readWaitMs: 300 });
      const cancel = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA });
      expect(cancel.status).toBe(202);
      cancelledAt = cancel.body.position;
    });
    afterAll(() => {
      t.app.get(ReadModelSettings).tune({ readWaitMs: 5_000 });
      t.app.get(Projector).start();
    });

    it('answers an eventual read at once, from what the read model holds', async () => {
      const view = await api.get(`/v1/executions/${executionId}?consistency=eventual`, viewer);
      expect(view.status).toBe(200);
      expect(view.body.status).toBe('queued');
      expect(view.body.position < cancelledAt).toBe(true);
    });

    it.each([
      ['the default', (id: string) => [`/v1/executions/${id}`, {}] as const],
      ['?minPosition=', (id: string, p: string) => [`/v1/executions/${id}?minPosition=${p}`, {}] as const],
      ['X-Flostra-Min-Position', (id: string, p: string) => [`/v1/executions/${id}/history`, { 'x-flostra-min-position': p }] as const],
      ['a list with ?minPosition=', (_id: string, p: string) => [`/v1/workspaces/ws-a/executions?minPosition=${p}`, {}] as const],
    ])('answers 503 unavailable after the bound for %s, rather than a stale answer', async (_name, request) => {
      const [path, headers] = request(executionId, cancelledAt);
      const before = Date.now();
      const res = await api.get(path, { ...viewer, headers });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('unavailable');
      expect(Date.now() - before).toBeGreaterThanOrEqual(250);
    });

    it('catches up once the projector runs again, and then shows the write', async () => {
      t.app.get(ReadModelSettings).tune({ readWaitMs: 5_000 });
      t.app.get(Projector).start();
      const view = await api.get(`/v1/executions/${executionId}?minPosition=${cancelledAt}`, viewer);
      expect(view.status).toBe(200);
      expect(view.body).toMatchObject({ status: 'cancelled', position: cancelledAt });
      const history = await api.get(`/v1/executions/${executionId}/history`, {
        ...viewer,
        headers: { 'x-flostra-min-position': cancelledAt },
      });
      expect(history.body.events.at(-1).position).toBe(cancelledAt);
    });
  });

  it('rejects a minPosition this store never handed out', async () => {
    const { executionId } = await start(api, 'chain');
    const res = await api.get(`/v1/executions/${executionId}?minPosition=not-a-position`, viewer);
    expect(res.status).toBe(400);
    expect(res.body.issues).toEqual([{ path: 'minPosition', message: 'not a position of this event store' }]);
  });
});
