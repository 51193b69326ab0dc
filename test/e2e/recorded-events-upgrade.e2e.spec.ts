import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sha256OfCanonical } from '../../src/core/canonical-json.js';
import { uuidV5 } from '../../src/core/ids.js';
import { executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { chainWorkflow, publish } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Events are never rewritten: a store upgraded in place still holds executions whose events an
 * older release wrote (ExecutionStarted of schema version 1 kept the Idempotency-Key and the
 * request's fingerprint side by side). They must read as if written now, and keep their meaning.
 */
describe.each(STORE_KINDS)('an execution whose start was recorded with schema version 1, on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  const key = 'started-by-an-older-release';
  const body = { input: { order: 42 } };
  const executionId = uuidV5(`execution:ws-a:${key}`);

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'legacy', chainWorkflow());
    const workflow = (await api.get('/v1/workspaces/ws-a/workflows/legacy', { token: TOKENS.viewerA })).body;
    const at = new Date().toISOString();
    const metadata = { schemaVersion: 1, workspaceId: 'ws-a', executionId };
    await t.store.appendToStream(
      executionStreamId(executionId),
      [
        {
          id: uuidV5(`${executionId}:start:0`),
          type: 'ExecutionStarted',
          data: {
            executionId,
            workspaceId: 'ws-a',
            workflow: {
              workflowId: workflow.workflowId,
              name: 'legacy',
              revision: workflow.revision,
              digest: workflow.digest,
              graph: workflow.graph,
            },
            input: body.input,
            idempotencyKey: key,
            requestFingerprint: sha256OfCanonical({ workflow: 'legacy', body }),
            startedBy: 'oscar',
            startedAt: at,
          },
          metadata,
        },
        {
          id: uuidV5(`${executionId}:start:1`),
          type: 'AttemptScheduled',
          data: {
            attemptId: uuidV5(`${executionId}:attempt:1`),
            attemptNumber: 1,
            reason: 'start',
            notBefore: at,
            queueDeadline: at,
            scheduledAt: at,
          },
          metadata,
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    // Its queue deadline has passed: the watchdog times it out. Let it, so that no test below
    // races that append.
    await eventually(
      async () => (await t.store.readStream(executionStreamId(executionId))).some((event) => event.type === 'ExecutionTimedOut'),
      'the watchdog to time the recorded execution out',
    );
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers the same start again with the recorded execution, appending nothing', async () => {
    const head = await t.store.headPosition();
    const again = await api.post('/v1/workspaces/ws-a/workflows/legacy/executions', {
      token: TOKENS.operatorA,
      body,
      headers: { 'idempotency-key': key },
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ executionId, status: 'queued' });
    expect(await t.store.headPosition()).toBe(head);
  });

  it('refuses the same key with another body as a conflict', async () => {
    const other = await api.post('/v1/workspaces/ws-a/workflows/legacy/executions', {
      token: TOKENS.operatorA,
      body: { input: { order: 43 } },
      headers: { 'idempotency-key': key },
    });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('idempotency_conflict');
  });

  it('shows the start in its history in the current shape', async () => {
    const history = await api.get(`/v1/executions/${executionId}/history`, { token: TOKENS.viewerA });
    expect(history.status).toBe(200);
    const started = history.body.events.find((e: { type: string }) => e.type === 'ExecutionStarted');
    expect(started.data.idempotency).toEqual({ key, fingerprint: sha256OfCanonical({ workflow: 'legacy', body }) });
    expect(started.data).not.toHaveProperty('idempotencyKey');
  });

  it('shows its events in the audit trail, the actor derived from the payload where it says', async () => {
    const audit = await api.get('/v1/workspaces/ws-a/audit', { token: TOKENS.adminA });
    expect(audit.status).toBe(200);
    const ours = audit.body.items
      .filter((item: { executionId?: string }) => item.executionId === executionId)
      .map((item: { action: string; actor: string; workflow: string }) => [item.action, item.actor, item.workflow]);
    expect(ours).toEqual([
      ['ExecutionTimedOut', 'system:watchdog', 'legacy'],
      ['AttemptTimedOut', 'system:watchdog', 'legacy'],
      ['AttemptScheduled', 'unknown', 'legacy'],
      ['ExecutionStarted', 'oscar', 'legacy'],
    ]);
  });

  it('goes on from where it was: its queue deadline passed, so a worker cannot claim it', async () => {
    const view = await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA });
    const claim = await api.post(`/v1/executions/${executionId}/attempts/${view.body.attempts[0].attemptId}/claim`, {
      token: TOKENS.worker,
      body: { workerId: 'w-1' },
    });
    expect(claim.status).toBe(409);
    expect(claim.body.code).toBe('stale_attempt');
  });
});
