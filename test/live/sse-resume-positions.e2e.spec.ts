import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { ALL_STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { historyOf, runExecution, type HistoryEvent } from './live-scenario.js';
import { SseStream } from './sse-test-client.js';

/** A position moved by `delta` in its second part: well-formed, and (here) no event's. */
function shifted(position: string, delta: bigint): string {
  const [major, minor] = position.split('-');
  return `${major}-${(BigInt(minor) + delta).toString().padStart(minor.length, '0')}`;
}

/** The same place in the other store's format: Postgres has 19 digits after the dash, KurrentDB 20. */
function otherStoresFormat(position: string): string {
  const [major, minor] = position.split('-');
  return `${major}-${minor.length === 19 ? `0${minor}` : minor.slice(1)}`;
}

/** 10^19 as the first part: a valid position for both stores, far beyond any log of a test. */
function beyondTheLog(position: string): string {
  return `1${'0'.repeat(19)}-${position.split('-')[1]}`;
}

describe.each(ALL_STORE_KINDS)('resume positions of live streams on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  let executionId: string;
  let history: HistoryEvent[];

  const routes = () => ({
    execution: `/v1/executions/${executionId}/events`,
    workspace: '/v1/workspaces/ws-a/events',
  });

  /** Opens with the cursor as the header or as `?lastEventId=`. */
  const openWith = (route: string, via: 'header' | 'query', cursor: string) =>
    via === 'header'
      ? SseStream.open(`${t.url}${route}`, { token: TOKENS.viewerA, lastEventId: cursor })
      : SseStream.open(`${t.url}${route}?lastEventId=${encodeURIComponent(cursor)}`, { token: TOKENS.viewerA });

  /** The answer of a refused stream: its status and problem, and proof that no stream bytes came. */
  async function refusal(stream: SseStream) {
    // A stream that opened would never end by itself: the assertions below say what went wrong.
    if (stream.status === 200) stream.close();
    await stream.ended;
    expect(stream.headers['content-type']).toBe('application/problem+json');
    expect(stream.retry).toBeNull();
    expect(stream.messages).toEqual([]);
    return { status: stream.status, problem: JSON.parse(stream.body) as Record<string, unknown> };
  }

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
    executionId = await runExecution(api, 'chain', 2);
    history = await historyOf(api, executionId);
  });
  afterAll(() => t?.close());

  describe.each(['execution', 'workspace'] as const)('%s streams', (topic) => {
    describe.each(['header', 'query'] as const)('given as the %s', (via) => {
      const path = via === 'header' ? 'Last-Event-ID' : 'query.lastEventId';

      it.each([
        ['garbage', () => 'garbage'],
        ['zzz', () => 'zzz'],
        ['a position in the other store’s format', () => otherStoresFormat(history[1].position)],
        ['an event id with a character more', () => `${history[1].position}0`],
      ])('refuses %s with 400 validation_failed before any stream bytes', async (_name, cursor) => {
        const answer = await refusal(await openWith(routes()[topic], via, cursor()));
        expect(answer.status).toBe(400);
        expect(answer.problem).toMatchObject({
          code: 'validation_failed',
          issues: [{ path, message: expect.stringContaining('not a position of this event store') }],
        });
      });

      it('refuses a well-formed position beyond the end of the log with 409 position_ahead', async () => {
        const answer = await refusal(await openWith(routes()[topic], via, beyondTheLog(history[1].position)));
        expect(answer.status).toBe(409);
        expect(answer.problem).toMatchObject({
          code: 'position_ahead',
          detail: expect.stringContaining('beyond the end of the event log'),
        });
      });
    });
  });

  it('resumes after a well-formed position behind the head that is no event’s', async () => {
    const fromBefore = await openWith(routes().execution, 'header', shifted(history[0].position, -1n));
    const fromBetween = await openWith(routes().execution, 'query', shifted(history[1].position, 1n));
    await fromBefore.until((s) => s.messages.length >= history.length);
    await fromBetween.until((s) => s.messages.length >= history.length - 2);
    fromBefore.close();
    fromBetween.close();
    expect(fromBefore.status).toBe(200);
    expect(fromBefore.ids).toEqual(history.map((event) => event.position));
    expect(fromBetween.ids).toEqual(history.slice(2).map((event) => event.position));
  });

  it('still resumes a workspace stream after an event id it sent', async () => {
    const stream = await openWith(routes().workspace, 'header', history.at(-2)!.position);
    await stream.until((s) => s.messages.length >= 1);
    stream.close();
    expect(stream.ids[0]).toBe(history.at(-1)!.position);
  });
});
