import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { historyOf, liveOf, runExecution, startAndClaim } from './live-scenario.js';
import { SseStream } from './sse-test-client.js';

describe.each(STORE_KINDS)('live events over SSE on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  const open = (path: string, options: Parameters<typeof SseStream.open>[1] = {}) =>
    SseStream.open(`${t.url}${path}`, { token: TOKENS.viewerA, ...options });
  const executionEvents = (executionId: string) => `/v1/executions/${executionId}/events`;

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
  });
  afterAll(() => t?.close());

  describe('the protocol', () => {
    it('answers with the SSE headers, then retry and a comment as the first bytes', async () => {
      liveOf(t.app).tune({ retryMs: 1_234 });
      const { executionId } = await start(api, 'chain');
      const stream = await open(executionEvents(executionId));
      await stream.until((s) => s.retry !== null && s.comments.length > 0);
      stream.close();
      expect(stream.status).toBe(200);
      expect(stream.headers['content-type']).toBe('text/event-stream');
      expect(stream.headers['cache-control']).toBe('no-store');
      expect(stream.headers['x-accel-buffering']).toBe('no');
      expect(stream.retry).toBe(1_234);
    });

    it('sends a comment heartbeat at the configured interval', async () => {
      liveOf(t.app).tune({ heartbeatMs: 30 });
      const { executionId } = await start(api, 'chain');
      const stream = await open(executionEvents(executionId));
      await stream.until((s) => s.comments.length >= 4, 'heartbeats');
      stream.close();
      liveOf(t.app).tune({ heartbeatMs: 10_000 });
    });

    it('sends each event with its position as id, its type as event and its /history JSON as data', async () => {
      const executionId = await runExecution(api, 'chain', 2);
      const history = await historyOf(api, executionId);
      const stream = await open(executionEvents(executionId));
      await stream.until((s) => s.messages.length >= history.length);
      stream.close();
      expect(stream.ids).toEqual(history.map((e) => e.position));
      expect(stream.messages.map((m) => m.event)).toEqual(history.map((e) => e.type));
      expect(stream.data()).toEqual(history.map((e) => ({ ...e, executionId, workspaceId: 'ws-a' })));
    });
  });

  describe('an execution stream', () => {
    it('starts at the first event, then follows live', async () => {
      const run = await startAndClaim(api, 'chain');
      const stream = await open(executionEvents(run.executionId));
      await stream.until((s) => s.messages.some((m) => m.event === 'AttemptClaimed'));
      await run.heartbeat();
      await run.complete();
      await stream.until((s) => s.messages.some((m) => m.event === 'ExecutionSucceeded'));
      stream.close();
      expect(stream.ids).toEqual((await historyOf(api, run.executionId)).map((e) => e.position));
    });

    it('resumes strictly after Last-Event-ID, and after ?lastEventId on a first connection', async () => {
      const executionId = await runExecution(api, 'chain', 3);
      const history = await historyOf(api, executionId);
      const cut = history[2].position;
      const byHeader = await open(executionEvents(executionId), { lastEventId: cut });
      const byQuery = await open(`${executionEvents(executionId)}?lastEventId=${encodeURIComponent(cut)}`);
      // Both at once: the header, which an EventSource sends on reconnection, wins.
      const both = await open(`${executionEvents(executionId)}?lastEventId=${encodeURIComponent(history[0].position)}`, {
        lastEventId: cut,
      });
      for (const stream of [byHeader, byQuery, both]) {
        await stream.until((s) => s.messages.length >= history.length - 3);
        stream.close();
        expect(stream.ids).toEqual(history.slice(3).map((e) => e.position));
      }
    });
  });

  describe('a workspace stream', () => {
    it('starts with the next new event of the workspace', async () => {
      const before = await runExecution(api, 'chain', 0);
      const stream = await open('/v1/workspaces/ws-a/events');
      await stream.until((s) => s.comments.length > 0);
      const executionId = await runExecution(api, 'chain', 1);
      const history = await historyOf(api, executionId);
      await stream.until((s) => s.ids.includes(history.at(-1)!.position));
      stream.close();
      expect(stream.data<{ executionId: string }>().every((e) => e.executionId !== before)).toBe(true);
      expect(stream.ids).toEqual(history.map((e) => e.position));
    });

    it('resumes from a cursor across executions, in position order', async () => {
      const first = await runExecution(api, 'chain', 1);
      const second = await runExecution(api, 'chain', 1);
      const [a, b] = [await historyOf(api, first), await historyOf(api, second)];
      const stream = await open(`/v1/workspaces/ws-a/events?lastEventId=${encodeURIComponent(a[0].position)}`);
      await stream.until((s) => s.ids.includes(b.at(-1)!.position));
      stream.close();
      expect(stream.ids).toEqual([...a.slice(1), ...b].map((e) => e.position));
    });
  });

  describe('authorization', () => {
    it("answers another workspace's execution with the 404 of GET /v1/executions/:id", async () => {
      const { executionId } = await start(api, 'chain');
      const plain = await api.get(`/v1/executions/${executionId}`, { token: TOKENS.adminB });
      const stream = await open(executionEvents(executionId), { token: TOKENS.adminB });
      await stream.ended;
      expect(stream.status).toBe(404);
      expect(stream.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(stream.body)).toEqual(plain.body);
      const unknown = await open(executionEvents('00000000-0000-4000-8000-000000000000'));
      await unknown.ended;
      expect(unknown.status).toBe(404);
      expect(JSON.parse(unknown.body)).toEqual(plain.body);
    });

    it('answers a workspace stream without a grant there with 404, and no token with 401', async () => {
      const other = await open('/v1/workspaces/ws-a/events', { token: TOKENS.adminB });
      const anonymous = await open('/v1/workspaces/ws-a/events', { token: undefined });
      await Promise.all([other.ended, anonymous.ended]);
      expect(other.status).toBe(404);
      expect(JSON.parse(other.body).code).toBe('not_found');
      expect(anonymous.status).toBe(401);
    });

    it('rejects a malformed cursor with 400', async () => {
      const stream = await open('/v1/workspaces/ws-a/events', { lastEventId: 'two words' });
      await stream.ended;
      expect(stream.status).toBe(400);
      expect(JSON.parse(stream.body).code).toBe('validation_failed');
    });
  });
});
