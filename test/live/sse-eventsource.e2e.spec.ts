import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EventSource } from 'eventsource';
import { EXECUTION_EVENT_TYPES } from '../../src/executions/domain/execution.events.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { dropperOfStreams, historyOf, liveOf, startAndClaim } from './live-scenario.js';

describe.each(STORE_KINDS)('a real EventSource client (npm eventsource) on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
    liveOf(t.app).tune({ retryMs: 200 });
  });
  afterAll(() => t?.close());

  it('resumes by itself after the server drops the connection, with every event once', async () => {
    const dropStreams = dropperOfStreams(t.app.getHttpServer());
    const run = await startAndClaim(api, 'chain');
    const received: { id: string; type: string }[] = [];
    let opens = 0;
    const es = new EventSource(`${t.url}/v1/executions/${run.executionId}/events`, {
      // EventSource has no headers of its own; this client lets a fetch wrapper add them.
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${TOKENS.viewerA}` } }),
    });
    es.addEventListener('open', () => void opens++);
    for (const type of EXECUTION_EVENT_TYPES) {
      es.addEventListener(type, (event) => void received.push({ id: event.lastEventId, type: event.type }));
    }
    try {
      await eventually(() => received.some((e) => e.type === 'AttemptClaimed'));
      await run.heartbeat();
      await eventually(() => received.some((e) => e.type === 'LeaseExtended'));
      dropStreams();
      // Appended while the client is away (it waits `retry` before reconnecting).
      await run.heartbeat();
      await eventually(() => opens >= 2);
      await run.complete();
      await eventually(() => received.some((e) => e.type === 'ExecutionSucceeded'));
    } finally {
      es.close();
    }
    const history = await historyOf(api, run.executionId);
    expect(received).toEqual(history.map((e) => ({ id: e.position, type: e.type })));
    expect(opens).toBeGreaterThanOrEqual(2);
  });
});
