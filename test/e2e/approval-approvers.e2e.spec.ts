import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { client, type ApiClient } from '../support/http-client.js';
import { claim, publish, start, view } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const ACTION = { wire: 'EUR 12,500 to ACME' };

/** prepare → sign-off: an approval node, with the given approvers (or none named). */
function guarded(approvers?: string[]) {
  return {
    nodes: [
      { id: 'prepare', type: 'noop' },
      { id: 'sign-off', type: 'approval', config: { action: ACTION, ...(approvers ? { approvers } : {}) } },
    ],
    edges: [{ from: 'prepare', to: 'sign-off' }],
  };
}

/**
 * `config.approvers` of an approval node is enforced: only the subjects it names may decide, any
 * other operator of the workspace (even its admin) gets 403 and nothing is written. Subjects of
 * the test tokens: oscar (operator), eve (editor), alice (admin).
 */
describe.each(STORE_KINDS)('an approval node that names its approvers, on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'guarded', guarded(['oscar']));
    await publish(api, 'open', guarded());
  });
  afterAll(() => t?.close());

  /** Starts an execution of `workflow` and brings it to its approval, as a worker would. */
  async function awaitingApproval(workflow: string): Promise<{ executionId: string; actionDigest: string }> {
    const { executionId, attemptId } = await start(api, workflow);
    const claimed = await claim(api, executionId, attemptId, 'approvals-worker');
    expect(claimed.status).toBe(200);
    const done = await api.post(`/v1/executions/${executionId}/attempts/${attemptId}/complete`, {
      token: TOKENS.worker,
      body: {
        workerId: 'approvals-worker',
        fencingToken: claimed.body.fencingToken,
        outcome: 'suspended',
        approval: { nodeId: 'sign-off', action: ACTION },
      },
    });
    expect(done.status).toBe(200);
    const waiting = await view(api, executionId);
    expect(waiting.status).toBe('awaiting_approval');
    return { executionId, actionDigest: waiting.pendingApproval.actionDigest as string };
  }

  const decide = (executionId: string, token: string, actionDigest: string, decision = 'approve') =>
    api.post(`/v1/executions/${executionId}/approvals/sign-off`, { token, body: { decision, actionDigest } });

  it('refuses an operator who is not named (403), writing nothing, and lets a named one decide', async () => {
    const { executionId, actionDigest } = await awaitingApproval('guarded');
    const head = await t.store.headPosition();

    for (const token of [TOKENS.adminA, TOKENS.editorA]) {
      for (const decision of ['approve', 'reject']) {
        const refused = await decide(executionId, token, actionDigest, decision);
        expect(refused.status).toBe(403);
        expect(refused.body).toMatchObject({ code: 'forbidden', status: 403 });
        expect(refused.body.detail).toContain('sign-off');
      }
    }
    expect(await t.store.headPosition()).toBe(head);
    expect((await view(api, executionId)).status).toBe('awaiting_approval');

    const approved = await decide(executionId, TOKENS.operatorA, actionDigest);
    expect(approved.status).toBe(202);
    expect(approved.body).toMatchObject({ decision: 'approve', status: 'queued' });
    const after = await view(api, executionId);
    expect(after.pendingApproval).toBeNull();
    expect(after.nodes.find((n: { nodeId: string }) => n.nodeId === 'sign-off')).toMatchObject({
      status: 'succeeded',
      output: { approved: true, decidedBy: 'oscar', actionDigest },
    });
  });

  it('still refuses someone not named once the approver has decided, rather than answer as a replay', async () => {
    const { executionId, actionDigest } = await awaitingApproval('guarded');
    expect((await decide(executionId, TOKENS.operatorA, actionDigest)).status).toBe(202);
    const head = await t.store.headPosition();
    const again = await decide(executionId, TOKENS.adminA, actionDigest);
    expect(again.status).toBe(403);
    expect(await t.store.headPosition()).toBe(head);
  });

  it('lets any operator of the workspace decide a node that names nobody', async () => {
    const { executionId, actionDigest } = await awaitingApproval('open');
    const approved = await decide(executionId, TOKENS.adminA, actionDigest);
    expect(approved.status).toBe(202);
    const after = await view(api, executionId);
    expect(after.nodes.find((n: { nodeId: string }) => n.nodeId === 'sign-off').output).toMatchObject({ decidedBy: 'alice' });
  });

  it('keeps the workspace roles first: a viewer is refused for its role, another workspace gets 404', async () => {
    const { executionId, actionDigest } = await awaitingApproval('guarded');
    const viewer = await decide(executionId, TOKENS.viewerA, actionDigest);
    expect(viewer.status).toBe(403);
    expect(viewer.body.requiredRole).toBe('operator');
    expect((await decide(executionId, TOKENS.adminB, actionDigest)).status).toBe(404);
  });
});
