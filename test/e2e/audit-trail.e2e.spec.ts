import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TOPICS } from '../../src/core/bus.port.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { chainWorkflow, claim, view } from '../support/scenario.js';
import { ALL_STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

interface AuditItem {
  position: string;
  at: string;
  actor: string;
  action: string;
  executionId?: string;
  workflow?: string;
  detail: Record<string, unknown>;
}

/** Planted in an execution's input, in nodes' outputs and in the action awaiting approval. */
const MARK = `audit-marker-${randomUUID()}`;

/**
 * The audit trail over a small scenario: people publish, start, cancel, redrive and approve; a
 * worker claims, heartbeats and reports results over the bus; the watchdog times an attempt out
 * on the adjustable clock. Test subjects: eve (editor), oscar (operator), alice (admin).
 */
describe.each(ALL_STORE_KINDS)('the audit trail of a workspace on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  /** Every audit response body, to search for the marker. */
  const answers: unknown[] = [];
  /** What the scenario did, in order: [execution or workflow, action, actor]. */
  const done: [string, string, string][] = [];
  const ids = { e1: '', e2: '', e3: '' };

  const audit = async (query = '', token: string = TOKENS.adminA) => {
    const res = await api.get(`/v1/workspaces/ws-a/audit${query}`, { token });
    answers.push(res.body);
    return res;
  };

  /** Every entry, following `next` with pages of `limit`. */
  async function everyEntry(limit: number): Promise<AuditItem[]> {
    const items: AuditItem[] = [];
    let before: string | null = null;
    do {
      const res = await audit(`?limit=${limit}${before === null ? '' : `&before=${encodeURIComponent(before)}`}`);
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(limit);
      items.push(...res.body.items);
      before = res.body.next;
    } while (before !== null);
    return items;
  }

  async function publishResults(executionId: string, attemptId: string, workerId: string, fencingToken: number, results: object[]) {
    const messages = results.map((result, sequence) => ({
      key: executionId,
      value: JSON.stringify({ messageId: randomUUID(), executionId, attemptId, workerId, fencingToken, sequence, ...result }),
    }));
    await t.bus.publish(TOPICS.results, messages);
  }

  const untilStatus = (executionId: string, status: string) =>
    eventually(async () => expect((await view(api, executionId)).status).toBe(status), { what: `${executionId} to be ${status}` });

  async function startAs(workflow: string, input: object) {
    const res = await api.post(`/v1/workspaces/ws-a/workflows/${workflow}/executions`, { token: TOKENS.operatorA, body: { input } });
    expect(res.status).toBe(201);
    const attemptId = (await view(api, res.body.executionId)).attempts[0].attemptId as string;
    return { executionId: res.body.executionId as string, attemptId };
  }

  beforeAll(async () => {
    t = await startTestApp(kind, { FLOSTRA_SECRETS_KEY: randomBytes(32).toString('base64') });
    api = client(t.url);

    // Two workflows, published by an editor.
    for (const [name, graph] of [
      [
        'audited',
        chainWorkflow({
          nodes: [
            { id: 'a', type: 'noop' },
            { id: 'b', type: 'noop' },
          ],
          edges: [{ from: 'a', to: 'b' }],
        }),
      ],
      [
        'signed',
        {
          nodes: [
            { id: 'prepare', type: 'noop' },
            { id: 'sign-off', type: 'approval', config: { action: { approve: 'the payout' }, approvers: ['oscar'] } },
          ],
          edges: [{ from: 'prepare', to: 'sign-off' }],
        },
      ],
    ] as const) {
      const res = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.editorA, body: graph });
      expect(res.status).toBe(201);
      done.push([name, 'WorkflowRevisionPublished', 'eve']);
    }
    // An admin stores a secret (its value is the marker) and deletes it.
    expect((await api.put('/v1/workspaces/ws-a/secrets/AUDIT_KEY', { token: TOKENS.adminA, body: { value: MARK } })).status).toBe(201);
    expect((await api.request('DELETE', '/v1/workspaces/ws-a/secrets/AUDIT_KEY', { token: TOKENS.adminA })).status).toBe(204);
    done.push(['-', 'SecretPut', 'alice'], ['-', 'SecretDeleted', 'alice']);
    // Another workspace's doings stay in its own trail.
    expect((await api.put('/v1/workspaces/ws-b/workflows/elsewhere', { token: TOKENS.adminB, body: chainWorkflow() })).status).toBe(201);

    // E1: started by oscar with the marker in its input; a worker claims, heartbeats and reports over the bus.
    const e1 = await startAs('audited', { secret: MARK });
    ids.e1 = e1.executionId;
    done.push([e1.executionId, 'ExecutionStarted', 'oscar'], [e1.executionId, 'AttemptScheduled', 'oscar']);
    const claimed = await claim(api, e1.executionId, e1.attemptId, 'audit-worker');
    expect(claimed.status).toBe(200);
    const fence = { workerId: 'audit-worker', fencingToken: claimed.body.fencingToken as number };
    const beat = await api.post(`/v1/executions/${e1.executionId}/attempts/${e1.attemptId}/heartbeat`, {
      token: TOKENS.worker,
      body: fence,
    });
    expect(beat.status).toBe(200);
    await publishResults(e1.executionId, e1.attemptId, fence.workerId, fence.fencingToken, [
      { kind: 'node_started', nodeId: 'a' },
      { kind: 'node_succeeded', nodeId: 'a', output: { leak: MARK } },
      { kind: 'node_started', nodeId: 'b' },
      { kind: 'node_succeeded', nodeId: 'b', output: { leak: MARK } },
      { kind: 'attempt_succeeded', output: { b: { leak: MARK } } },
    ]);
    await untilStatus(e1.executionId, 'succeeded');
    for (const action of [
      'AttemptClaimed',
      'LeaseExtended',
      'NodeStarted',
      'NodeSucceeded',
      'NodeStarted',
      'NodeSucceeded',
      'AttemptSucceeded',
      'ExecutionSucceeded',
    ]) {
      done.push([e1.executionId, action, 'worker:audit-worker']);
    }

    // E2: oscar starts and cancels it, alice redrives it, a worker claims the redrive and goes
    // silent: the watchdog times it out once the clock passes the lease.
    const e2 = await startAs('audited', {});
    ids.e2 = e2.executionId;
    expect((await api.post(`/v1/executions/${e2.executionId}/cancel`, { token: TOKENS.operatorA, body: { reason: MARK } })).status).toBe(
      202,
    );
    const redrive = await api.post(`/v1/executions/${e2.executionId}/redrive`, {
      token: TOKENS.adminA,
      headers: { 'idempotency-key': `redrive-${randomUUID()}` },
      body: { reason: MARK },
    });
    expect(redrive.status).toBe(202);
    expect((await claim(api, e2.executionId, redrive.body.attemptId, 'audit-worker-2')).status).toBe(200);
    t.clock.advance(31_000); // the default lease is 30 s
    await untilStatus(e2.executionId, 'timed_out');
    done.push(
      [e2.executionId, 'ExecutionStarted', 'oscar'],
      [e2.executionId, 'AttemptScheduled', 'oscar'],
      [e2.executionId, 'CancelRequested', 'oscar'],
      [e2.executionId, 'AttemptCancelled', 'oscar'],
      [e2.executionId, 'ExecutionCancelled', 'oscar'],
      [e2.executionId, 'RedriveRequested', 'alice'],
      [e2.executionId, 'AttemptScheduled', 'alice'],
      [e2.executionId, 'AttemptClaimed', 'worker:audit-worker-2'],
      [e2.executionId, 'AttemptTimedOut', 'system:watchdog'],
      [e2.executionId, 'ExecutionTimedOut', 'system:watchdog'],
    );

    // E3: reaches its approval node; alice is not among its approvers, oscar is.
    const e3 = await startAs('signed', { secret: MARK });
    ids.e3 = e3.executionId;
    const claimed3 = await claim(api, e3.executionId, e3.attemptId, 'audit-worker');
    expect(claimed3.status).toBe(200);
    await publishResults(e3.executionId, e3.attemptId, 'audit-worker', claimed3.body.fencingToken, [
      { kind: 'node_started', nodeId: 'prepare' },
      { kind: 'node_succeeded', nodeId: 'prepare', output: { leak: MARK } },
      { kind: 'attempt_suspended', nodeId: 'sign-off', output: { action: { approve: 'the payout', amount: MARK } } },
    ]);
    await untilStatus(e3.executionId, 'awaiting_approval');
    const digest = (await view(api, e3.executionId)).pendingApproval.actionDigest as string;
    const decide = (token: string) =>
      api.post(`/v1/executions/${e3.executionId}/approvals/sign-off`, {
        token,
        body: { decision: 'approve', actionDigest: digest, comment: MARK },
      });
    expect((await decide(TOKENS.adminA)).status).toBe(403);
    expect((await decide(TOKENS.operatorA)).status).toBe(202);
    done.push(
      [e3.executionId, 'ExecutionStarted', 'oscar'],
      [e3.executionId, 'AttemptScheduled', 'oscar'],
      [e3.executionId, 'AttemptClaimed', 'worker:audit-worker'],
      [e3.executionId, 'NodeStarted', 'worker:audit-worker'],
      [e3.executionId, 'NodeSucceeded', 'worker:audit-worker'],
      [e3.executionId, 'NodeAwaitingApproval', 'worker:audit-worker'],
      [e3.executionId, 'AttemptSuspended', 'worker:audit-worker'],
      [e3.executionId, 'ApprovalGranted', 'oscar'],
      // The approval was the last node: its grant ends the execution, no resume attempt.
      [e3.executionId, 'ExecutionSucceeded', 'oscar'],
    );
  });
  afterAll(() => t?.close());

  it('shows every action of the workspace, newest first, with who did it', async () => {
    // No wait here: the query itself reflects every write acknowledged before it.
    const items = await everyEntry(200);
    const order = (entry: [string, string, string]) => entry[0];
    expect(items.map((i) => [i.executionId ?? i.workflow ?? '-', i.action, i.actor])).toEqual(
      // E2's time-out came before E3 started: the scenario's order is the log's.
      [...done].reverse().map((entry) => [order(entry), entry[1], entry[2]]),
    );
    const positions = items.map((i) => i.position);
    expect([...positions].sort().reverse()).toEqual(positions);
    expect(new Set(positions).size).toBe(positions.length);
    // Each entry says where it belongs.
    for (const item of items.filter((i) => i.executionId !== undefined)) {
      expect(item.workflow).toBe(item.executionId === ids.e3 ? 'signed' : 'audited');
    }
    expect(items.every((i) => !Number.isNaN(Date.parse(i.at)))).toBe(true);
  });

  it('matches the log: one entry per event of the workspace, at its position, with the actor of its metadata', async () => {
    const log = await t.store.readAll({ maxCount: 10_000 });
    const ours = log.filter((e) => e.metadata['workspaceId'] === 'ws-a');
    expect(ours.length).toBe(done.length);
    const items = await everyEntry(200);
    expect(items.map((i) => [i.position, i.action, i.actor])).toEqual(
      [...ours].reverse().map((e) => [e.position, e.type, e.metadata['actor']]),
    );
  });

  it('summarizes each action with ids and codes only', async () => {
    const items = await everyEntry(200);
    const find = (executionId: string, action: string) => items.find((i) => i.executionId === executionId && i.action === action)!;
    expect(find(ids.e1, 'AttemptClaimed').detail).toMatchObject({ workerId: 'audit-worker', fencingToken: 1 });
    expect(find(ids.e2, 'AttemptTimedOut').detail).toMatchObject({ reason: 'lease_expired' });
    expect(find(ids.e3, 'ApprovalGranted').detail).toEqual({ nodeId: 'sign-off', actionDigest: expect.any(String) });
    expect(items.find((i) => i.action === 'WorkflowRevisionPublished')!.detail).toEqual({ revision: 1, digest: expect.any(String) });
    expect(items.find((i) => i.action === 'SecretPut')!.detail).toEqual({ name: 'AUDIT_KEY', version: 1 });
  });

  it('pages by position: following next never repeats or skips an entry', async () => {
    const all = await everyEntry(200);
    for (const limit of [1, 4, 7]) {
      expect((await everyEntry(limit)).map((i) => i.position)).toEqual(all.map((i) => i.position));
    }
    const first = await audit('?limit=3');
    expect(first.body.next).toBe(first.body.items[2].position);
    const second = await audit(`?limit=3&before=${encodeURIComponent(first.body.next)}`);
    expect(second.body.items.map((i: AuditItem) => i.position)).toEqual(all.slice(3, 6).map((i) => i.position));
    const last = await audit(`?before=${encodeURIComponent(all.at(-2)!.position)}`);
    expect(last.body).toEqual({ items: [all.at(-1)], next: null });
    const defaults = await audit();
    expect(defaults.body.items).toHaveLength(Math.min(50, all.length));
  });

  it('never shows a secret’s value, an execution’s input, a node’s output, an action awaiting approval, a reason or a comment', async () => {
    // The marker is in the log (else this proves nothing) ...
    const history = await api.get(`/v1/executions/${ids.e1}/history`, { token: TOKENS.viewerA });
    expect(JSON.stringify(history.body)).toContain(MARK);
    await everyEntry(5);
    // ... and in no answer of the audit trail.
    expect(answers.length).toBeGreaterThan(5);
    for (const answer of answers) expect(JSON.stringify(answer)).not.toContain(MARK);
  });

  it('keeps other workspaces out: ws-b sees its own publish only', async () => {
    const res = await api.get('/v1/workspaces/ws-b/audit', { token: TOKENS.adminB });
    answers.push(res.body);
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: AuditItem) => [i.workflow, i.action, i.actor])).toEqual([
      ['elsewhere', 'WorkflowRevisionPublished', 'bob'],
    ]);
    expect(res.body.next).toBeNull();
  });

  it('is for the workspace’s admins: 403 for a viewer, operator or editor, 404 without any role there', async () => {
    for (const token of [TOKENS.viewerA, TOKENS.operatorA, TOKENS.editorA]) {
      const res = await audit('', token);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'forbidden', requiredRole: 'admin' });
    }
    for (const token of [TOKENS.adminB, TOKENS.worker]) {
      const res = await audit('', token);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect((await api.get('/v1/workspaces/ws-a/audit')).status).toBe(401);
  });

  it('refuses a malformed before or limit with 400', async () => {
    const ws = await api.get('/v1/workspaces/ws-b/audit', { token: TOKENS.adminB });
    const elsewhere = ws.body.items[0].position as string;
    for (const query of [
      '?before=',
      '?before=not-a-position',
      `?before=${encodeURIComponent(elsewhere)}`,
      '?limit=0',
      '?limit=201',
      '?limit=x',
      '?page=2',
    ]) {
      const res = await audit(query);
      expect([query, res.status, res.body.code]).toEqual([query, 400, 'validation_failed']);
    }
  });
});
