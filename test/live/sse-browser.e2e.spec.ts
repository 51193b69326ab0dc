import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { EXECUTION_EVENT_TYPES } from '../../src/executions/domain/execution.events.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { dropperOfStreams, historyOf, liveOf, startAndClaim } from './live-scenario.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-proxy-server',
];

// The page a person would open: an EventSource and nothing else, reconnection left to the browser.
const PAGE = `<!doctype html><meta charset="utf-8"><title>Flostra live</title><script>
  window.received = []; window.opens = 0;
  const execution = new URLSearchParams(location.search).get('execution');
  const source = new EventSource('/v1/executions/' + execution + '/events');
  source.onopen = () => { window.opens++; };
  for (const type of ${JSON.stringify(EXECUTION_EVENT_TYPES)}) {
    source.addEventListener(type, (e) => window.received.push({ id: e.lastEventId, type: e.type }));
  }
</script>`;

/**
 * Serves the page from 127.0.0.1 and forwards /v1/ to the API, adding the bearer token: a
 * browser's EventSource cannot send an Authorization header, so a same-origin gateway holds it.
 * A cut upstream is cut downstream too, so the browser sees the server drop its stream.
 */
async function startPageServer(apiUrl: string): Promise<{ url: string; server: Server }> {
  const api = new URL(apiUrl);
  const server = createServer((req, res) => {
    if (!req.url?.startsWith('/v1/')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(PAGE);
      return;
    }
    const headers: Record<string, string> = { authorization: `Bearer ${TOKENS.viewerA}`, accept: 'text/event-stream' };
    const lastEventId = req.headers['last-event-id'];
    if (typeof lastEventId === 'string') headers['last-event-id'] = lastEventId;
    const upstream = request({ host: api.hostname, port: api.port, path: req.url, headers, agent: false }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      res.flushHeaders();
      answer.on('data', (chunk: Buffer) => res.write(chunk));
      answer.on('end', () => res.end());
      answer.on('error', () => res.destroy());
      answer.on('close', () => answer.complete || res.destroy());
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    upstream.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

describe.each(STORE_KINDS)('headless Chromium watching an execution on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  let pages: { url: string; server: Server };
  let context: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium) to run the browser SSE test`,
      );
    }
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
    liveOf(t.app).tune({ retryMs: 200 });
    pages = await startPageServer(t.url);
    profile = mkdtempSync(join(tmpdir(), 'flostra-chromium-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await context?.close();
    pages?.server.close();
    if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
    await t?.close();
  });

  it('resumes by itself after the server drops the stream and shows every event once', async () => {
    const dropStreams = dropperOfStreams(t.app.getHttpServer());
    const run = await startAndClaim(api, 'chain');
    const page: Page = await context.newPage();
    // These functions run in the page, where the script above keeps its state on the global object.
    type InPage = { received: { id: string; type: string }[]; opens: number };
    const received = () => page.evaluate(() => (globalThis as unknown as InPage).received);
    const has = (type: string) => page.waitForFunction((t) => (globalThis as unknown as InPage).received.some((e) => e.type === t), type);

    await page.goto(`${pages.url}/?execution=${run.executionId}`);
    await has('AttemptClaimed');
    await run.heartbeat();
    await has('LeaseExtended');
    dropStreams();
    await run.heartbeat(); // while the browser waits `retry` before reconnecting
    await page.waitForFunction(() => (globalThis as unknown as InPage).opens >= 2);
    await run.complete();
    await has('ExecutionSucceeded');

    const history = await historyOf(api, run.executionId);
    expect(await received()).toEqual(history.map((e) => ({ id: e.position, type: e.type })));
    await page.close();
  });
});
