import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { TOPICS, type Bus } from '../../src/core/bus.port.js';
import { InProcessBus } from '../../src/bus/in-process/in-process-bus.js';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { type HistoryEvent, workspaceA } from '../support/workspace-a.js';

type Event = HistoryEvent;

/** Faults of issue 3 that need no second process: one app, its worker, the in-process bus. */
describe('the worker under injected faults (embedded stack)', () => {
  const barrier = new BarrierServer();
  let t: TestApp;
  let api: ApiClient;

  beforeAll(() => barrier.start());
  afterAll(() => barrier.stop());
  afterEach(() => t?.close());

  async function boot(options: { bus?: Bus; leaseMs?: number } = {}) {
    t = await startTestApp('pglite', {}, { worker: { egressAllow: ['127.0.0.1/32'] }, ...(options.bus ? { bus: options.bus } : {}) });
    api = client(t.url);
  }

  const publishAndStart = (name: string, graph: object, input: object = {}) => workspaceA(api).publishAndStart(name, graph, input);
  const history = (executionId: string) => workspaceA(api).history(executionId);
  const untilStatus = (executionId: string, statuses: string[]) => workspaceA(api).untilStatus(executionId, statuses);

  const indexOf = (events: Event[], type: string, nodeId: string) =>
    events.findIndex((e) => e.type === type && e.data['nodeId'] === nodeId);

  it("(a) A→B, A→D, B→D: D does not start until B succeeded, and D sees B's output (promise 5)", async () => {
    await boot();
    const executionId = await publishAndStart('uneven-join', {
      nodes: [
        { id: 'a', type: 'noop' },
        { id: 'b', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/join-b` } },
        { id: 'd', type: 'transform', config: { expression: '$.nodes' } },
      ],
      edges: [
        { from: 'a', to: 'b' },
        { from: 'a', to: 'd' },
        { from: 'b', to: 'd' },
      ],
    });
    await eventually(() => barrier.heldCount('join-b') === 1, 'B to be held at the barrier');
    const whileHeld = await history(executionId);
    expect(indexOf(whileHeld, 'NodeSucceeded', 'a')).toBeGreaterThanOrEqual(0);
    expect(indexOf(whileHeld, 'NodeStarted', 'd')).toBe(-1);
    barrier.release('join-b');
    const done = await untilStatus(executionId, ['succeeded', 'failed']);
    expect(done.status).toBe('succeeded');
    const events = await history(executionId);
    expect(indexOf(events, 'NodeStarted', 'd')).toBeGreaterThan(indexOf(events, 'NodeSucceeded', 'b'));
    const d = done.nodes.find((n: { nodeId: string }) => n.nodeId === 'd');
    expect(d.output.b.body).toEqual({ name: 'join-b', idempotencyKey: `${executionId}:b` });
  });

  it('(d) the same dispatch delivered twice yields one claim', async () => {
    const bus = new InProcessBus();
    const duplicating: Bus = {
      durable: bus.durable,
      publish: async (topic, messages) => {
        await bus.publish(topic, messages);
        if (topic === TOPICS.dispatch) await bus.publish(topic, messages);
      },
      consume: (options) => bus.consume(options),
      endOffsets: (topic) => bus.endOffsets(topic),
      committedOffsets: (groupId, topic) => bus.committedOffsets(groupId, topic),
      ensureTopics: (topics) => bus.ensureTopics(topics),
      close: () => bus.close(),
    };
    await boot({ bus: duplicating });
    const executionId = await publishAndStart('dup-dispatch', {
      nodes: [{ id: 'only', type: 'http', config: { method: 'GET', url: `${barrier.url}/echo/dup-only` } }],
      edges: [],
    });
    await untilStatus(executionId, ['succeeded']);
    const events = await history(executionId);
    expect(events.filter((e) => e.type === 'AttemptClaimed')).toHaveLength(1);
    expect(barrier.hits.get('dup-only')).toBe(1);
    await bus.close();
  });

  it('(e) a result that cannot be published fails the attempt visibly; it never ends as succeeded (promise 6)', async () => {
    const bus = new InProcessBus();
    const refusingResults: Bus = {
      durable: bus.durable,
      publish: async (topic, messages) => {
        if (topic === TOPICS.results) throw new Error('broker refused the result (injected)');
        await bus.publish(topic, messages);
      },
      consume: (options) => bus.consume(options),
      endOffsets: (topic) => bus.endOffsets(topic),
      committedOffsets: (groupId, topic) => bus.committedOffsets(groupId, topic),
      ensureTopics: (topics) => bus.ensureTopics(topics),
      close: () => bus.close(),
    };
    await boot({ bus: refusingResults });
    const executionId = await publishAndStart('lost-results', { nodes: [{ id: 'x', type: 'noop' }], edges: [] });
    const done = await untilStatus(executionId, ['failed', 'succeeded']);
    expect(done.status).toBe('failed');
    expect(done.error.code).toBe('result_publish_failed');
    const events = await history(executionId);
    expect(events.some((e) => e.type === 'ExecutionSucceeded')).toBe(false);
    await bus.close();
  });

  it('(g) cancel while a long node runs: the node is aborted and the execution ends cancelled', async () => {
    await boot();
    // A delay waits outside the attempt (a durable timer): a request held open is the long node.
    const executionId = await publishAndStart('long-delay', {
      nodes: [{ id: 'sleep', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/long-sleep` } }],
      edges: [],
      timeouts: { leaseMs: 3_000 },
    });
    const running = await eventually(async () => {
      const events = await history(executionId);
      return indexOf(events, 'NodeStarted', 'sleep') >= 0 ? events : false;
    }, 'the long node to start');
    expect(running.some((e) => e.type === 'AttemptClaimed')).toBe(true);
    const cancel = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: { reason: 'stop it' } });
    expect(cancel.status).toBe(202);
    const done = await untilStatus(executionId, ['cancelled', 'succeeded', 'failed']);
    expect(done.status).toBe('cancelled');
    const events = await history(executionId);
    expect(indexOf(events, 'NodeSucceeded', 'sleep')).toBe(-1);
    expect(events.map((e) => e.type)).toContain('AttemptCancelled');
  });

  it('(h) an approval is bound to its action: a digest of a changed action is refused, the right one resumes', async () => {
    await boot();
    const executionId = await publishAndStart(
      'needs-approval',
      {
        nodes: [
          { id: 'draft', type: 'transform', config: { expression: '{ "amount": $.input.amount }' } },
          { id: 'sign-off', type: 'approval', config: { action: { send: 'wire-transfer' } } },
          { id: 'send', type: 'http', config: { method: 'POST', url: `${barrier.url}/echo/approved-send` } },
        ],
        edges: [
          { from: 'draft', to: 'sign-off' },
          { from: 'sign-off', to: 'send' },
        ],
      },
      { amount: 650 },
    );
    const waiting = await untilStatus(executionId, ['awaiting_approval']);
    const pending = waiting.pendingApproval;
    expect(pending.nodeId).toBe('sign-off');
    expect(pending.action.inputs.draft).toEqual({ amount: 650 });
    expect(barrier.hits.get('approved-send')).toBeUndefined();
    const wrongDigest = 'f'.repeat(64);
    const mismatch = await api.post(`/v1/executions/${executionId}/approvals/sign-off`, {
      token: TOKENS.operatorA,
      body: { decision: 'approve', actionDigest: wrongDigest },
    });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.code).toBe('approval_mismatch');
    expect((await untilStatus(executionId, ['awaiting_approval'])).status).toBe('awaiting_approval');
    const approved = await api.post(`/v1/executions/${executionId}/approvals/sign-off`, {
      token: TOKENS.operatorA,
      body: { decision: 'approve', actionDigest: pending.actionDigest },
    });
    expect(approved.status).toBe(202);
    const done = await untilStatus(executionId, ['succeeded', 'failed']);
    expect(done.status).toBe('succeeded');
    expect(barrier.hits.get('approved-send')).toBe(1);
    // The node that ran before the approval was not run again by the resume attempt.
    const events = await history(executionId);
    expect(events.filter((e) => e.type === 'NodeSucceeded' && e.data['nodeId'] === 'draft')).toHaveLength(1);
  });
});
