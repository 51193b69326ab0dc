import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import { treeStreamId } from '../../src/subworkflows/domain/tree.events.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish as publishChain, start, view } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { auditRuns, executionEvents } from '../support/workspaces/quota-audit.js';

/**
 * Sub-workflow trees on the embedded stack: fan-out bounded per tree,
 * children counted by the workspace quota without a deadlock, a cycle refused at publish, a
 * root's cancel stopping every start in its tree, and another workspace's execution running
 * meanwhile.
 */
const LEAF = { nodes: [{ id: 'make', type: 'transform', config: { expression: '{ "done": true }' } }], edges: [] };
const HELD = { nodes: [{ id: 'sign', type: 'approval' }], edges: [] };
/** Three `subworkflow` nodes side by side, each running `workflow`. */
const threeOf = (workflow: string) => ({
  nodes: ['a', 'b', 'c'].map((id) => ({ id, type: 'subworkflow', config: { workflow } })),
  edges: [],
});
const FINAL = ['succeeded', 'failed', 'timed_out', 'cancelled'];

describe('sub-workflow trees on the embedded stack', () => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp('pglite', {}, { worker: true });
    api = client(t.url);
    await publish(api, 'leaf', LEAF);
    await publish(api, 'held', HELD);
    await publish(api, 'middle', { nodes: [{ id: 'inner', type: 'subworkflow', config: { workflow: 'leaf' } }], edges: [] });
    await publish(api, 'fan', {
      nodes: [
        { id: 'a', type: 'subworkflow', config: { workflow: 'leaf' } },
        { id: 'b', type: 'subworkflow', config: { workflow: 'leaf' } },
        { id: 'c', type: 'subworkflow', config: { workflow: 'middle' } },
      ],
      edges: [],
    });
    // Four levels, three wide: 1 + 3 + 9 + 27 = 40 executions when nothing bounds the tree.
    for (const [name, leaf] of [
      ['wide', 'leaf'],
      ['held-wide', 'held'],
    ]) {
      await publish(api, `${name}-2`, threeOf(leaf));
      await publish(api, `${name}-1`, threeOf(`${name}-2`));
      await publish(api, `${name}-0`, threeOf(`${name}-1`));
    }
  });
  afterAll(() => t?.close());

  const publish = (_: ApiClient, name: string, graph: object) => publishChain(api, name, graph as Parameters<typeof publishChain>[2]);

  const settings = async (body: object) => {
    const res = await api.put('/v1/workspaces/ws-a/settings', { token: TOKENS.adminA, body });
    expect(res.status).toBe(200);
  };
  const ended = (executionId: string, status?: string) =>
    eventually(
      async () => {
        const v = await view(api, executionId);
        return FINAL.includes(v.status) && (status === undefined || v.status === status) && v;
      },
      { what: `execution ${executionId} to end ${status ?? ''}`, timeoutMs: 60_000 },
    );
  /** The executions started in the tree under `rootId`, from the log. */
  const treeStarts = async (rootId: string): Promise<RecordedEvent[]> =>
    (await executionEvents(t.store)).filter(
      (e) => e.type === 'ExecutionStarted' && (e.data as { parent?: { rootExecutionId?: string } }).parent?.rootExecutionId === rootId,
    );

  it('with a bound of 1, a parent with three children and a grandchild all finish, one run at a time', async () => {
    await settings({ maxConcurrentExecutions: 1 });
    try {
      const { executionId } = await start(api, 'fan');
      const parent = await ended(executionId, 'succeeded');
      expect(parent.children.map((c: { status: string }) => c.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
      // Children are runs of the workspace: never two at once, the parent's waits for its children included.
      const { runs, maxConcurrent } = await auditRuns(t.store, 'ws-a');
      expect(maxConcurrent).toBe(1);
      expect(runs.filter((r) => r.executionId === executionId).length).toBeGreaterThan(1);
      expect(runs.every((r) => r.ended !== null)).toBe(true);
    } finally {
      await settings({ maxConcurrentExecutions: null });
    }
  });

  it('refuses fa → fb → fa at publish with a 400, and writes nothing', async () => {
    await publish(api, 'fa', { nodes: [{ id: 'n', type: 'noop' }], edges: [] });
    await publish(api, 'fb', threeOf('fa'));
    const res = await api.put('/v1/workspaces/ws-a/workflows/fa', { token: TOKENS.adminA, body: threeOf('fb') });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'nodes[0].config.workflow' }] });
    expect(res.body.issues[0].message).toContain('fa → fb → fa');
    const fa = await api.get('/v1/workspaces/ws-a/workflows/fa', { token: TOKENS.viewerA });
    expect(fa.body).toMatchObject({ revision: 1 });
  });

  it("stops a tree at its workspace's bound, while another workspace's execution runs", async () => {
    await settings({ maxConcurrentExecutions: null, maxExecutionsPerTree: 10 });
    try {
      const { executionId } = await start(api, 'wide-0');
      const other = await api.put('/v1/workspaces/ws-b/workflows/noop', { token: TOKENS.adminB, body: LEAF });
      expect(other.status).toBe(201);
      const started = await api.post('/v1/workspaces/ws-b/workflows/noop/executions', { token: TOKENS.adminB, body: {} });
      const root = await ended(executionId, 'failed');
      const res = await api.get(`/v1/executions/${started.body.executionId}`, { token: TOKENS.adminB });
      await eventually(
        async () => (await api.get(`/v1/executions/${started.body.executionId}`, { token: TOKENS.adminB })).body.status === 'succeeded',
        {
          what: "ws-b's execution to succeed",
        },
      );
      expect(res.status).toBe(200);
      // The root and nine descendants: ten, the bound; not the forty the workflows ask for.
      const members = await treeStarts(executionId);
      expect(members).toHaveLength(9);
      const tree = await t.store.readStream(treeStreamId(executionId));
      expect(tree.filter((e) => e.type === 'TreeMemberAdmitted')).toHaveLength(9);
      const errors = await Promise.all(members.map(async (e) => (await view(api, e.streamId.slice('execution-'.length))).nodes));
      const refused = [...errors.flat(), ...root.nodes].filter(
        (n: { error?: { code: string } }) => n.error?.code === 'subworkflow_tree_limit_exceeded',
      );
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0].error.retryable).toBe(false);
    } finally {
      await settings({ maxConcurrentExecutions: null, maxExecutionsPerTree: null });
    }
  });

  it("a root's cancel closes its tree: nothing is admitted after it, and every member ends cancelled", async () => {
    const { executionId } = await start(api, 'held-wide-0');
    await eventually(async () => (await treeStarts(executionId)).length >= 4, { what: 'the tree to grow' });
    const res = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: { reason: 'runaway' } });
    expect([200, 202]).toContain(res.status);
    await ended(executionId, 'cancelled');

    // The manager closes the tree as it reads the cancel.
    await eventually(async () => (await t.store.readStream(treeStreamId(executionId))).some((e) => e.type === 'TreeClosed'), {
      what: 'the tree to close',
    });
    // Every member of the tree ends cancelled, and each had its place before the close: a child
    // admitted just before it may start after it, and is cancelled as it starts.
    const { members, tree } = await eventually(
      async () => {
        const tree = await t.store.readStream(treeStreamId(executionId));
        const starts = await treeStarts(executionId);
        const views = await Promise.all(starts.map((e) => view(api, e.streamId.slice('execution-'.length))));
        const admitted = tree.filter((e) => e.type === 'TreeMemberAdmitted').length;
        return starts.length === admitted && views.every((v) => v.status === 'cancelled') && { members: views, tree };
      },
      { what: 'every member of the tree to end cancelled', timeoutMs: 60_000 },
    );
    const closedAt = tree.findIndex((e) => e.type === 'TreeClosed');
    expect(tree.slice(closedAt + 1)).toEqual([]);
    const admitted = new Set(tree.slice(0, closedAt).map((e) => (e.data as { childExecutionId: string }).childExecutionId));
    for (const member of members) expect(admitted.has(member.executionId)).toBe(true);
  });
});
