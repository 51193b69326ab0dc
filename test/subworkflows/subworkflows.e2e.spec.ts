import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start, view } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** The child: builds an invoice for the customer it is given. */
const INVOICE = {
  nodes: [{ id: 'make', type: 'transform', config: { expression: '{ "invoice": "inv-" & input.customer }' } }],
  edges: [],
};

/** A child that always fails. */
const BROKEN = { nodes: [{ id: 'boom', type: 'fail', config: { code: 'out_of_paper', message: 'no paper' } }], edges: [] };

/** A child that waits for a person: it stays running until decided or cancelled. */
const HELD = { nodes: [{ id: 'sign', type: 'approval' }], edges: [] };

/** prepare → bill (runs `child`) → done: the child's output flows on. */
const parentOf = (child: string) => ({
  nodes: [
    { id: 'prepare', type: 'transform', config: { expression: '{ "customer": input.customer }' } },
    { id: 'bill', type: 'subworkflow', config: { workflow: child, input: 'nodes.prepare' } },
    { id: 'done', type: 'transform', config: { expression: '{ "billed": nodes.bill.make.invoice }' } },
  ],
  edges: [
    { from: 'prepare', to: 'bill' },
    { from: 'bill', to: 'done' },
  ],
});

/** A child that runs `held` as its own child: a grandchild waits. */
const MIDDLE = { nodes: [{ id: 'inner', type: 'subworkflow', config: { workflow: 'held' } }], edges: [] };

/** Three children side by side: two wait for an approval, the third for its own child, which waits for one. */
const FAN = {
  nodes: [
    { id: 'a', type: 'subworkflow', config: { workflow: 'held' } },
    { id: 'b', type: 'subworkflow', config: { workflow: 'held' } },
    { id: 'c', type: 'subworkflow', config: { workflow: 'middle' } },
  ],
  edges: [],
};

describe('sub-workflows on the embedded stack', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: true });
    api = client(t.url);
    await publish(api, 'invoice', INVOICE);
    await publish(api, 'broken', BROKEN);
    await publish(api, 'held', HELD);
    await publish(api, 'order', parentOf('invoice'));
    await publish(api, 'order-broken', parentOf('broken'));
    await publish(api, 'middle', MIDDLE);
    await publish(api, 'fan', FAN);
  });
  afterAll(() => t?.close());

  const ended = (executionId: string, status: string) =>
    eventually(
      async () => {
        const v = await view(api, executionId);
        return v.status === status && v;
      },
      { what: `execution ${executionId} to be ${status}` },
    );

  it('runs the child to completion and takes its output; the child names its parent', async () => {
    const { executionId } = await start(api, 'order', { input: { customer: 'c-7' } });
    const parent = await ended(executionId, 'succeeded');
    expect(parent.output).toEqual({ done: { billed: 'inv-c-7' } });
    expect(parent.parentExecutionId).toBeNull();
    expect(parent.children).toEqual([
      expect.objectContaining({ nodeId: 'bill', workflow: 'invoice', status: 'succeeded', executionId: expect.any(String) }),
    ]);
    const child = await view(api, parent.children[0].executionId);
    expect(child).toMatchObject({
      status: 'succeeded',
      input: { customer: 'c-7' },
      parentExecutionId: executionId,
      parent: { executionId, nodeId: 'bill', depth: 1 },
      workflow: { name: 'invoice' },
    });
  });

  it('fails the node `child_failed` when the child fails, and the parent fails with it', async () => {
    const { executionId } = await start(api, 'order-broken', { input: { customer: 'c-8' } });
    const parent = await ended(executionId, 'failed');
    const childId = parent.children[0].executionId;
    expect(parent.error).toMatchObject({ code: 'child_failed' });
    expect(parent.error.message).toContain(childId);
    expect(parent.nodes.find((n: { nodeId: string }) => n.nodeId === 'bill')).toMatchObject({
      status: 'failed',
      error: { code: 'child_failed' },
    });
    expect(await view(api, childId)).toMatchObject({ status: 'failed', error: { code: 'out_of_paper' } });
  });

  it('cancelling a parent cancels its three running children, and theirs', async () => {
    const { executionId } = await start(api, 'fan');
    const [waiting, grandchild] = await eventually(
      async () => {
        const v = await view(api, executionId);
        if (v.children.length !== 3) return false;
        const children = await Promise.all(v.children.map((c: { executionId: string }) => view(api, c.executionId)));
        const middle = children.find((c) => c.workflow.name === 'middle');
        if (middle?.status !== 'waiting' || middle.children.length !== 1) return false;
        const inner = await view(api, middle.children[0].executionId);
        const held = [...children.filter((c) => c !== middle), inner];
        return held.every((c) => c.status === 'awaiting_approval') && ([v, inner] as const);
      },
      { what: 'three children and a grandchild waiting' },
    );
    expect(grandchild.parent).toMatchObject({ depth: 2 });
    const res = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: { reason: 'order withdrawn' } });
    // 200 when the parent ended at once (suspended), 202 while its attempt still ran.
    expect([200, 202]).toContain(res.status);
    for (const child of waiting.children) await ended(child.executionId, 'cancelled');
    await ended(grandchild.executionId, 'cancelled');
    const parent = await eventually(
      async () => {
        const v = await view(api, executionId);
        return v.status === 'cancelled' && v.children.every((c: { status: string }) => c.status === 'cancelled') && v;
      },
      { what: 'the parent to record its children cancelled' },
    );
    expect(parent.children.map((c: { nodeId: string }) => c.nodeId).sort()).toEqual(['a', 'b', 'c']);
  });

  it('refuses at publish a sub-workflow that does not exist, or the workflow itself, and writes nothing', async () => {
    const missing = await api.put('/v1/workspaces/ws-a/workflows/orphan', { token: TOKENS.adminA, body: parentOf('nowhere') });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'nodes[1].config.workflow' }] });
    const itself = await api.put('/v1/workspaces/ws-a/workflows/loop', { token: TOKENS.adminA, body: parentOf('loop') });
    expect(itself.status).toBe(400);
    expect(itself.body.issues[0].message).toContain('itself');
    // Another workspace's workflow is not there either.
    const foreign = await api.put('/v1/workspaces/ws-b/workflows/orphan', { token: TOKENS.adminB, body: parentOf('invoice') });
    expect(foreign.status).toBe(400);
    for (const name of ['orphan', 'loop']) {
      expect((await api.get(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.viewerA })).status).toBe(404);
    }
  });
});
