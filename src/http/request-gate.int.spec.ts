import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Body, Controller, Param, Post } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { eventually } from '../../test/support/eventually.js';
import { AuthModule } from '../auth/auth.module.js';
import { TokenRegistry } from '../auth/token-registry.js';
import { loadConfig } from '../config/config.js';
import { createLogger } from '../core/logger.js';
import { configureHttp } from './configure-http.js';

const TENANT_A = 'request-gate-spec-tenant-a-0123456789';
const TENANT_B = 'request-gate-spec-tenant-b-0123456789';
const WORKER = 'request-gate-spec-worker-0123456789';

/** Requests that are held once their handler began, until the test lets them go. */
const began: string[] = [];
const releases = new Map<string, () => void>();

@Controller()
class HoldController {
  @Post('gate/hold/:name')
  async hold(@Param('name') name: string, @Body() body: unknown) {
    began.push(name);
    await new Promise<void>((resolve) => releases.set(name, resolve));
    return { name, body };
  }

  @Post('gate/quick')
  quick() {
    return {};
  }

  @Post('v1/workspaces/:workspaceId/task-queues/:queue/poll')
  async poll(@Param('queue') queue: string) {
    return this.hold(queue, {});
  }
}

async function startApp(env: Record<string, string>): Promise<{ app: NestExpressApplication; base: string }> {
  const registry = new TokenRegistry([
    { token: TENANT_A, subject: 'tenant-a', workspaces: { a: 'operator' }, global: [] },
    { token: TENANT_B, subject: 'tenant-b', workspaces: { b: 'operator' }, global: [] },
    { token: WORKER, subject: 'worker', workspaces: {}, global: ['worker'] },
  ]);
  const moduleRef = await Test.createTestingModule({ imports: [AuthModule.forRoot(registry)], controllers: [HoldController] }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: false });
  configureHttp(app, loadConfig(env), createLogger({ level: 'error', write: () => undefined }));
  await app.listen(0, '127.0.0.1');
  return { app, base: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
}

describe('each token’s share of request handling', () => {
  let app: NestExpressApplication;
  let base: string;

  beforeAll(async () => {
    // Two in flight and one waiting per token while another token was seen within the hour.
    ({ app, base } = await startApp({
      FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN: '2',
      FLOSTRA_HTTP_MAX_QUEUED_PER_TOKEN: '1',
      FLOSTRA_HTTP_CONTENTION_WINDOW_MS: '3600000',
    }));
    const seen = await fetch(`${base}/gate/quick`, { method: 'POST', headers: { authorization: `Bearer ${TENANT_B}` } });
    expect(seen.status).toBe(201);
  });

  afterAll(async () => {
    for (const release of releases.values()) release();
    await app.close();
  });

  const hold = (token: string, name: string, signal?: AbortSignal) =>
    fetch(`${base}/gate/hold/${name}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
      signal,
    });
  const release = async (name: string) => {
    await eventually(() => releases.has(name), `${name} to be held`);
    releases.get(name)?.();
  };

  it('holds a token’s requests beyond its share until one of its own ends, while another token’s go at once', async () => {
    began.length = 0;
    const a = ['a1', 'a2', 'a3'].map((name) => hold(TENANT_A, name));
    await eventually(() => began.includes('a1') && began.includes('a2'), 'a1 and a2 to begin');
    const b = hold(TENANT_B, 'b1');
    await eventually(() => began.includes('b1'), 'b1 to begin');
    expect(began).not.toContain('a3');

    await release('a1');
    await eventually(() => began.includes('a3'), 'a3 to begin once a1 ended');
    await Promise.all(['a2', 'a3', 'b1'].map(release));
    const answers = await Promise.all([...a, b]);
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
    expect(await answers[2].json()).toEqual({ name: 'a3', body: { name: 'a3' } });
  });

  it('refuses a request beyond the token’s queue with 429 too_many_requests and Retry-After', async () => {
    began.length = 0;
    const held = ['c1', 'c2'].map((name) => hold(TENANT_A, name));
    await eventually(() => began.length === 2, 'c1 and c2 to begin');
    const queued = hold(TENANT_A, 'c3');
    const refused = await eventually(async () => {
      const answer = await hold(TENANT_A, 'c4');
      return answer.status === 429 && answer;
    }, 'a fourth request to be refused once c3 waits');
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(await refused.json()).toMatchObject({ code: 'too_many_requests', inFlight: 2, queued: 1 });
    expect(began).not.toContain('c4');

    await Promise.all(['c1', 'c2', 'c3'].map(release));
    expect((await Promise.all([...held, queued])).map((answer) => answer.status)).toEqual([201, 201, 201]);
  });

  it('never runs a waiting request whose client went away', async () => {
    began.length = 0;
    let d3Arrived = false;
    let d3Closed = false;
    // Runs after Express's own listener, so this 'close' listener runs after the gate's.
    app.getHttpServer().on('request', (request: IncomingMessage, response: ServerResponse) => {
      if (!request.url?.endsWith('/d3')) return;
      d3Arrived = true;
      response.once('close', () => (d3Closed = true));
    });
    const held = ['d1', 'd2'].map((name) => hold(TENANT_A, name));
    await eventually(() => began.length === 2, 'd1 and d2 to begin');
    const gone = new AbortController();
    const abandoned = hold(TENANT_A, 'd3', gone.signal).catch((error: unknown) => error);
    await eventually(() => d3Arrived, 'd3 to reach the server');
    gone.abort();
    await abandoned;
    await eventually(() => d3Closed, 'the server to see d3’s client go');

    await release('d1');
    const next = hold(TENANT_A, 'd4');
    await eventually(() => began.includes('d4'), 'd4 to begin in d1’s place');
    await Promise.all(['d2', 'd4'].map(release));
    await Promise.all([...held, next]);
    expect(began).not.toContain('d3');
  });

  it('does not gate task polls, which may wait long', async () => {
    began.length = 0;
    const polls = ['p1', 'p2', 'p3', 'p4'].map((queue) =>
      fetch(`${base}/v1/workspaces/a/task-queues/${queue}/poll`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TENANT_A}`, 'content-type': 'application/json' },
        body: '{}',
      }),
    );
    await eventually(() => began.length === 4, 'every poll to begin');
    await Promise.all(['p1', 'p2', 'p3', 'p4'].map(release));
    expect((await Promise.all(polls)).map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
  });

  it('does not gate the worker role', async () => {
    began.length = 0;
    const calls = ['w1', 'w2', 'w3', 'w4'].map((name) => hold(WORKER, name));
    await eventually(() => began.length === 4, 'every worker call to begin');
    await Promise.all(['w1', 'w2', 'w3', 'w4'].map(release));
    expect((await Promise.all(calls)).map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
  });
});

describe('a token alone', () => {
  it('is not held to a share: all its requests go at once', async () => {
    const { app, base } = await startApp({ FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN: '2', FLOSTRA_HTTP_CONTENTION_WINDOW_MS: '0' });
    try {
      began.length = 0;
      const names = ['e1', 'e2', 'e3', 'e4'];
      const calls = names.map((name) =>
        fetch(`${base}/gate/hold/${name}`, { method: 'POST', headers: { authorization: `Bearer ${TENANT_A}` } }),
      );
      await eventually(() => began.length === 4, 'every request to begin');
      for (const name of names) releases.get(name)?.();
      expect((await Promise.all(calls)).map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
    } finally {
      await app.close();
    }
  });
});
