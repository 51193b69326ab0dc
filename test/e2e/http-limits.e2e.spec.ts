import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { SseStream } from '../live/sse-test-client.js';
import { historyOf, startAndClaim } from '../live/live-scenario.js';
import { eventually, sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { RawConnection } from '../support/raw-http.js';
import { publish } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

const HEADERS_TIMEOUT_MS = 500;
const BODY_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 1_500;
/** Bounds for a failing test (what the limits promise, plus slack for a loaded machine); never timing assertions. */
const PROMPTLY = 5_000;

const START = '/v1/workspaces/ws-a/workflows/chain/executions';

/** The head of a request, without its body. */
function head(path: string, headers: Record<string, string | number>): string {
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;
}

describe('the HTTP shell on raw sockets: authentication before the body, declared lengths, slow requests', () => {
  let t: TestApp;
  let api: ApiClient;
  const connections: RawConnection[] = [];

  async function connect(): Promise<RawConnection> {
    const connection = await RawConnection.open(t.url);
    connections.push(connection);
    return connection;
  }

  beforeAll(async () => {
    t = await startTestApp('pglite', {
      FLOSTRA_HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      FLOSTRA_HTTP_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
      FLOSTRA_HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    });
    api = client(t.url);
    await publish(api, 'chain');
  });

  afterEach(() => {
    for (const connection of connections.splice(0)) connection.close();
  });

  afterAll(() => t?.close());

  describe('a request without a valid token', () => {
    it.each([
      ['no token', {}],
      ['an unknown token', { Authorization: 'Bearer token-nobody-issued' }],
    ])('with %s and a malformed body is 401, and its body is not read', async (_name, auth) => {
      const connection = await connect();
      connection.write(head(START, { ...auth, 'Content-Type': 'application/json', 'Content-Length': 5 }) + '{"a":');
      expect(await connection.status()).toBe(401);
      expect(await connection.problem()).toMatchObject({ code: 'unauthenticated' });
    });

    it('with a body it never sends is 401 at once; under Expect: 100-continue no 100 comes', async () => {
      const connection = await connect();
      connection.write(head(START, { 'Content-Type': 'application/json', 'Content-Length': 5_000_000_000, Expect: '100-continue' }));
      expect(await connection.status()).toBe(401);
      await connection.closedByServer();
      expect(connection.received).not.toContain('100 Continue');
    });
  });

  describe('a body declared larger than the limit', () => {
    it('is 413 at once, with two of its 5,000,000,000 bytes sent, and the connection is closed', async () => {
      const connection = await connect();
      connection.write(
        head(START, { Authorization: `Bearer ${TOKENS.operatorA}`, 'Content-Type': 'application/json', 'Content-Length': 5_000_000_000 }) +
          '{"',
      );
      expect(await connection.status(PROMPTLY)).toBe(413);
      expect(await connection.problem()).toMatchObject({ code: 'payload_too_large', limitBytes: 1_048_576 });
    });

    it('is 413 at once under Expect: 100-continue, before the client sent anything of it', async () => {
      const connection = await connect();
      connection.write(
        head(START, {
          Authorization: `Bearer ${TOKENS.operatorA}`,
          'Content-Type': 'application/json',
          'Content-Length': 5_000_000_000,
          Expect: '100-continue',
        }),
      );
      expect(await connection.status(PROMPTLY)).toBe(413);
      await connection.closedByServer();
      expect(connection.received).not.toContain('100 Continue');
    });

    it('but a body within the limit gets its 100 Continue, then its answer', async () => {
      const body = JSON.stringify({ input: { n: 1 } });
      const connection = await connect();
      connection.write(
        head(START, {
          Authorization: `Bearer ${TOKENS.operatorA}`,
          'Content-Type': 'application/json',
          'Content-Length': body.length,
          Expect: '100-continue',
        }),
      );
      await eventually(() => connection.received.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), 'the 100 Continue');
      connection.write(body);
      expect(await connection.status()).toBe(201);
    });
  });

  describe('a slow request', () => {
    it('whose body trickles in is 408 once the body timeout passed, and the connection is closed', async () => {
      const connection = await connect();
      connection.write(
        head(START, { Authorization: `Bearer ${TOKENS.operatorA}`, 'Content-Type': 'application/json', 'Content-Length': 100 }),
      );
      let sent = 0;
      const trickle = setInterval(() => {
        if (sent < 99 && connection.write(sent === 0 ? '{' : ' ')) sent++;
      }, 200);
      try {
        expect(await connection.status(BODY_TIMEOUT_MS + PROMPTLY)).toBe(408);
        expect(await connection.problem()).toMatchObject({ code: 'request_timeout', timeoutMs: BODY_TIMEOUT_MS });
      } finally {
        clearInterval(trickle);
      }
    });

    it('whose headers never end is 408 once the headers timeout passed, and the connection is closed', async () => {
      const connection = await connect();
      connection.write('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n');
      expect(await connection.status(HEADERS_TIMEOUT_MS + PROMPTLY)).toBe(408);
      await connection.closedByServer();
    });
  });

  it('leaves an open SSE stream alone for longer than the request timeout', async () => {
    const run = await startAndClaim(api, 'chain');
    const stream = await SseStream.open(`${t.url}/v1/executions/${run.executionId}/events`, { token: TOKENS.viewerA });
    await stream.until((s) => s.messages.some((m) => m.event === 'AttemptClaimed'));
    let ended = false;
    void stream.ended.then(() => (ended = true));

    // Several of the server's checks for expired requests pass meanwhile (every quarter of 500 ms).
    await sleep(2 * REQUEST_TIMEOUT_MS + HEADERS_TIMEOUT_MS);
    expect(ended).toBe(false);
    await run.heartbeat();
    await run.complete();
    await stream.until((s) => s.messages.some((m) => m.event === 'ExecutionSucceeded'));
    stream.close();
    expect(stream.ids).toEqual((await historyOf(api, run.executionId)).map((event) => event.position));
  });
});
