import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { InProcessControlPlane } from '../../src/app/in-process-control-plane.js';
import { InProcessResultSink } from '../../src/app/in-process-result-sink.js';
import { TOKEN_REGISTRY, type TokenRegistry } from '../../src/auth/token-registry.js';
import { TOPICS } from '../../src/core/bus.port.js';
import { createLogger } from '../../src/core/logger.js';
import { ControlPlaneClient } from '../../src/worker/runtime/control-plane.client.js';
import { ClaimRefusedError, type ControlPlane } from '../../src/worker/runtime/control-plane.port.js';
import { busResultSink } from '../../src/worker/runtime/result-sink.js';
import { recordTopic } from '../dispatch/support/process-fixture.js';
import { BarrierServer } from '../support/barrier-server.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { startTestApp, TOKEN_ENTRIES, TOKENS, type TestApp } from '../support/test-app.js';
import { workspaceA } from '../support/workspace-a.js';

type Transport = 'http' | 'in-process';

/**
 * The worker protocol both ways a worker reaches the control plane: over HTTP (a worker process
 * of its own) and in process (FLOSTRA_WORKER_TRANSPORT=in-process, the worker sharing the api's
 * process). Each way runs executions to their end with the app's own worker, and answers the
 * same refusals with the same status and code: a stale claim, a bad fence, a malformed id, a
 * token without the worker role, and the worker's token once it is revoked. In process, the
 * worker's results go to the app's ingestor directly (FLOSTRA_WORKER_RESULTS left at `auto`),
 * not through `flostra.results.v1`, and are still fenced and dead-lettered there.
 */
describe.each<Transport>(['http', 'in-process'])('the worker protocol, %s', (transport) => {
  const barrier = new BarrierServer();
  let t: TestApp;
  let api: ApiClient;

  beforeAll(() => barrier.start());
  afterAll(() => barrier.stop());
  afterEach(() => t?.close());

  /** What the app and its worker logged, as parsed records. */
  let logged: Record<string, unknown>[] = [];

  async function boot() {
    logged = [];
    const logger = createLogger({ level: 'info', write: (line) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
    t = await startTestApp('pglite', { FLOSTRA_WORKER_TRANSPORT: transport }, { worker: { egressAllow: ['127.0.0.1/32'] }, logger });
    api = client(t.url);
  }

  /** A control plane of this transport for `token`, as the app's worker has one. */
  function controlPlane(token: string): ControlPlane {
    return transport === 'http' ? new ControlPlaneClient(t.url, token) : InProcessControlPlane.of(t.app, token);
  }

  const publishAndStart = (name: string, graph: object) => workspaceA(api).publishAndStart(name, graph);
  const history = (executionId: string) => workspaceA(api).history(executionId);
  const untilStatus = (executionId: string, statuses: string[]) => workspaceA(api).untilStatus(executionId, statuses);

  const refusal = (call: Promise<unknown>) =>
    call.then(
      () => null,
      (error: unknown) => error,
    );

  it('runs an execution to its end, and refuses a stale claim, a bad fence and malformed input as 409 and 400', async () => {
    await boot();
    const executionId = await publishAndStart('fan-out', {
      nodes: ['a', 'b', 'c'].map((id) => ({ id, type: 'noop' })),
      edges: ['b', 'c'].map((to) => ({ from: 'a', to })),
    });
    expect((await untilStatus(executionId, ['succeeded', 'failed'])).status).toBe('succeeded');
    const claimed = (await history(executionId)).find((e) => e.type === 'AttemptClaimed')!;
    const attemptId = String(claimed.data['attemptId']);
    const plane = controlPlane(TOKENS.worker);
    try {
      const stale = await refusal(plane.claim(executionId, attemptId, 'another-worker'));
      expect(stale).toBeInstanceOf(ClaimRefusedError);
      expect(stale).toMatchObject({ status: 409, code: 'stale_attempt' });
      const fenced = await refusal(plane.heartbeat(executionId, attemptId, String(claimed.data['workerId']), 99));
      expect(fenced).toMatchObject({ status: 409, code: 'stale_attempt' });
      const malformed = await refusal(plane.claim('not-a-uuid', attemptId, 'w'));
      expect(malformed).toBeInstanceOf(ClaimRefusedError);
      expect(malformed).toMatchObject({ status: 400, code: 'validation_failed' });
      const secrets = await refusal(plane.resolveSecrets(executionId, attemptId, { workerId: 'w', fencingToken: 0, names: [] }));
      expect(secrets).toMatchObject({ status: 400, code: 'validation_failed' });
    } finally {
      plane.close();
    }
  });

  it('records the results of the app’s worker: over the results topic with HTTP claims, without it in process', async () => {
    await boot();
    const executionId = await publishAndStart('chain', {
      nodes: ['a', 'b', 'c'].map((id) => ({ id, type: 'noop' })),
      edges: ['a', 'b'].map((from, i) => ({ from, to: ['b', 'c'][i] })),
    });
    expect((await untilStatus(executionId, ['succeeded', 'failed'])).status).toBe('succeeded');
    const types = (await history(executionId)).map((e) => e.type);
    expect(types.filter((type) => type === 'NodeSucceeded')).toHaveLength(3);
    const onTopic = [...(await t.bus.endOffsets(TOPICS.results)).values()].reduce((sum, end) => sum + end, 0n);
    if (transport === 'http') expect(onTopic).toBeGreaterThan(0n);
    else expect(onTopic).toBe(0n);
  });

  it('dead-letters a result the decider refuses (a stale fencing token), with the reason, whichever way it came in', async () => {
    await boot();
    const dlq = await recordTopic(t.bus, TOPICS.resultsDlq);
    try {
      const executionId = await publishAndStart('ended', { nodes: [{ id: 'a', type: 'noop' }], edges: [] });
      await untilStatus(executionId, ['succeeded']);
      const claimed = (await history(executionId)).find((e) => e.type === 'AttemptClaimed')!;
      const fence = {
        executionId,
        attemptId: String(claimed.data['attemptId']),
        workerId: String(claimed.data['workerId']),
        fencingToken: Number(claimed.data['fencingToken']),
      };
      // A result under a fencing token the claim never gave, sent the way the app's worker sends its results.
      const late = { messageId: randomUUID(), ...fence, fencingToken: fence.fencingToken + 7, sequence: 0, kind: 'attempt_succeeded' };
      const sink = transport === 'in-process' ? InProcessResultSink.of(t.app) : busResultSink(t.bus);
      await sink.send([{ key: executionId, value: JSON.stringify(late) }]);
      const letter = await eventually(
        () => dlq.values().find((l) => (JSON.parse(String(l['original'])) as { messageId: string }).messageId === late.messageId) ?? false,
        'the late result to be dead-lettered',
      );
      expect(letter).toMatchObject({
        reason: { code: 'stale_attempt' },
        topic: transport === 'in-process' ? 'in-process' : TOPICS.results,
      });
      expect((await history(executionId)).map((e) => e.type).at(-1)).toBe('ExecutionSucceeded');
    } finally {
      await dlq.stop();
    }
  });

  it('cancel reaches the running attempt through its heartbeat: the node is aborted and the execution ends cancelled', async () => {
    await boot();
    const executionId = await publishAndStart('held', {
      nodes: [{ id: 'held', type: 'http', config: { method: 'GET', url: `${barrier.url}/hold/held-${transport}` } }],
      edges: [],
      timeouts: { leaseMs: 1_500 },
    });
    await eventually(async () => (await history(executionId)).some((e) => e.type === 'NodeStarted'), 'the held node to start');
    const cancel = await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.operatorA, body: {} });
    expect(cancel.status).toBe(202);
    expect((await untilStatus(executionId, ['cancelled', 'succeeded', 'failed'])).status).toBe('cancelled');
    const types = (await history(executionId)).map((e) => e.type);
    expect(types).toContain('AttemptCancelled');
    expect(types).not.toContain('NodeSucceeded');
  });

  it('refuses a token without the worker role (403), and the worker token once it is revoked (401): its worker claims nothing', async () => {
    await boot();
    const operator = controlPlane(TOKENS.operatorA);
    const worker = controlPlane(TOKENS.worker);
    try {
      const executionId = await publishAndStart('once', { nodes: [{ id: 'a', type: 'noop' }], edges: [] });
      await untilStatus(executionId, ['succeeded']);
      const attemptId = String((await history(executionId)).find((e) => e.type === 'AttemptClaimed')!.data['attemptId']);
      expect(await refusal(operator.claim(executionId, attemptId, 'w'))).toMatchObject({ status: 403, code: 'forbidden' });

      t.app.get<TokenRegistry>(TOKEN_REGISTRY).replace(TOKEN_ENTRIES.filter((entry) => entry.token !== TOKENS.worker));
      const revoked = await refusal(worker.claim(executionId, attemptId, 'w'));
      expect(revoked).toBeInstanceOf(ClaimRefusedError);
      expect(revoked).toMatchObject({ status: 401, code: 'unauthenticated' });
      // The app's own worker holds that token too: its claim of the next execution's attempt is refused.
      const next = await publishAndStart('after-revocation', { nodes: [{ id: 'a', type: 'noop' }], edges: [] });
      await eventually(
        () =>
          logged.some((r) => r['executionId'] === next && r['code'] === 'unauthenticated' && String(r['msg']).startsWith('claim refused')),
        "the worker's claim to be refused",
      );
      expect((await history(next)).map((e) => e.type)).not.toContain('AttemptClaimed');
    } finally {
      operator.close();
      worker.close();
    }
  });
});
