import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EXIT } from './errors.js';
import { follow, type SseMessage } from './sse.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A loopback SSE endpoint that answers its n-th request with the n-th handler. */
async function scripted(handlers: Handler[]): Promise<{ url: string; requests: IncomingMessage[]; server: Server }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    const handler = handlers[Math.min(requests.length, handlers.length) - 1];
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`, requests, server };
}

const streamHead = (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('retry: 20\n: hello\n\n');
};
const event = (id: number) => `id: ${id}\nevent: Step\ndata: {"n":${id}}\n\n`;
const problem = (res: ServerResponse, status: number, code: string) => {
  res.writeHead(status, { 'content-type': 'application/problem+json' });
  res.end(JSON.stringify({ type: `urn:flostra:problem:${code}`, title: code, status, detail: code, code }));
};

describe('following an SSE endpoint', () => {
  let server: Server | null = null;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = null;
  });

  it('resumes a dropped stream after the last event it delivered, each id once', async () => {
    const script = await scripted([
      (_req, res) => {
        streamHead(res);
        // Two whole events, then half of the third, then the connection dies.
        res.write(event(1) + event(2) + 'id: 3\nevent: Step\nda');
        setTimeout(() => res.socket?.destroy(), 20);
      },
      (_req, res) => {
        streamHead(res);
        // A relay that repeats the event it resumes after.
        res.write(event(2) + event(3) + event(4));
      },
    ]);
    server = script.server;
    const delivered: SseMessage[] = [];
    const reconnections: string[] = [];
    await follow({
      url: script.url,
      token: 'secret',
      onReconnecting: (why) => reconnections.push(why),
      onEvent: (message) => {
        delivered.push(message);
        return message.id === '4' ? 'stop' : undefined;
      },
    });
    expect(delivered.map((m) => m.id)).toEqual(['1', '2', '3', '4']);
    expect(delivered[0]).toEqual({ id: '1', event: 'Step', data: '{"n":1}' });
    expect(script.requests.map((r) => r.headers['last-event-id'])).toEqual([undefined, '2']);
    expect(script.requests.every((r) => r.headers.authorization === 'Bearer secret')).toBe(true);
    expect(reconnections).toHaveLength(1);
  });

  it('outwaits a server that answers 503 while it comes back', async () => {
    const script = await scripted([
      (_req, res) => {
        streamHead(res);
        res.end(event(1));
      },
      (_req, res) => problem(res, 503, 'unavailable'),
      (_req, res) => {
        streamHead(res);
        res.write(event(2));
      },
    ]);
    server = script.server;
    const ids: (string | null)[] = [];
    await follow({
      url: script.url,
      token: null,
      onEvent: (m) => {
        ids.push(m.id);
        return m.id === '2' ? 'stop' : undefined;
      },
    });
    expect(ids).toEqual(['1', '2']);
    expect(script.requests.map((r) => r.headers['last-event-id'])).toEqual([undefined, '1', '1']);
  });

  it('does not retry a first connection that is refused: the problem decides the exit code', async () => {
    const script = await scripted([(_req, res) => problem(res, 401, 'unauthenticated')]);
    server = script.server;
    await expect(follow({ url: script.url, token: 'bad', onEvent: () => undefined })).rejects.toMatchObject({
      exitCode: EXIT.auth,
      problem: { code: 'unauthenticated' },
    });
    expect(script.requests).toHaveLength(1);
  });

  it('stops reconnecting on an answer no wait will change (the execution is gone)', async () => {
    const script = await scripted([
      (_req, res) => {
        streamHead(res);
        res.end(event(1));
      },
      (_req, res) => problem(res, 404, 'not_found'),
    ]);
    server = script.server;
    await expect(follow({ url: script.url, token: null, onEvent: () => undefined })).rejects.toMatchObject({ exitCode: EXIT.notFound });
  });

  it('gives up, as unavailable, once reconnecting has failed for giveUpAfterMs', async () => {
    const script = await scripted([
      (_req, res) => {
        streamHead(res);
        res.end(event(1));
        // Nobody answers after this stream.
        script.server.close();
        script.server.closeAllConnections();
      },
    ]);
    const error = await follow({ url: script.url, token: null, giveUpAfterMs: 200, onEvent: () => undefined }).catch((e: unknown) => e);
    expect(error).toMatchObject({ exitCode: EXIT.unavailable, message: expect.stringContaining('cannot reach') });
  });
});
