import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { demoWorkflow } from '../../src/app/demo-workflow.js';
import { TOKEN_REGISTRY, type TokenRegistry } from '../../src/auth/token-registry.js';
import type { TokenEntry } from '../../src/auth/tokens-file.schema.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { dropperOfStreams, liveOf } from '../live/live-scenario.js';

/**
 * The web console in headless Chromium against the whole app with a worker: sign-in, the live
 * DAG of a run that loses its stream mid-run, cancel, an approval decided with its digest, and a
 * viewer who is offered no write and whose forged writes are refused. With FLOSTRA_SCREENSHOTS=1
 * it also writes docs/screenshots/*.png.
 */

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-sync',
  '--no-proxy-server',
];
const SCREENSHOTS = process.env.FLOSTRA_SCREENSHOTS === '1' ? join(process.cwd(), 'docs', 'screenshots') : null;

const ROOT = 'console-root-token-000001';
const VIEWER = 'console-viewer-token-0001';
const ENTRIES: TokenEntry[] = [
  { token: ROOT, subject: 'ada', workspaces: { 'ws-a': 'admin' }, global: ['system-admin'] },
  { token: VIEWER, subject: 'victor', workspaces: { 'ws-a': 'viewer' }, global: [] },
  { token: TOKENS.adminA, subject: 'alice', workspaces: { 'ws-a': 'admin' }, global: [] },
  { token: TOKENS.worker, subject: 'worker', workspaces: {}, global: ['worker'] },
  { token: TOKENS.taskWorkerA, subject: 'shipping-service', workspaces: { 'ws-a': 'task-worker' }, global: [] },
];

const slowDemo = {
  ...demoWorkflow,
  nodes: demoWorkflow.nodes.map((node) => (node.id === 'wait' ? { ...node, config: { ms: 2500 } } : node)),
};
const longDelay = { nodes: [{ id: 'hold', type: 'delay', config: { ms: 600_000 } }], edges: [], timeouts: { leaseMs: 3000 } };
const approval = {
  nodes: [
    { id: 'quote', type: 'transform', config: { expression: '{ "amount": 1200 }' } },
    { id: 'sign-off', type: 'approval', config: { action: { pay: 'ACME Corp' } } },
    { id: 'pay', type: 'noop' },
  ],
  edges: [
    { from: 'quote', to: 'sign-off' },
    { from: 'sign-off', to: 'pay' },
  ],
};

const shipping = { nodes: [{ id: 'ship', type: 'task', config: { queue: 'shipping' } }], edges: [] };

let t: TestApp;
let api: ApiClient;
let browser: Browser;
let admin: BrowserContext;
let page: Page;
let dropStreams: () => void;
const cspViolations: string[] = [];

async function shot(p: Page, name: string): Promise<void> {
  if (SCREENSHOTS === null) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await p.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

async function signedIn(context: BrowserContext, token: string): Promise<Page> {
  const p = await context.newPage();
  p.on('console', (message) => {
    if (/content security policy/i.test(message.text())) cspViolations.push(message.text());
  });
  await p.goto(`${t.url}/console`);
  await p.getByPlaceholder('paste your token').fill(token);
  if (token === ROOT) await shot(p, 'sign-in');
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('button', { name: 'Sign out' }).waitFor();
  return p;
}

async function startWith(name: string): Promise<string> {
  const res = await api.post(`/v1/workspaces/ws-a/workflows/${name}/executions`, {
    token: TOKENS.adminA,
    body: { input: { name: 'world' } },
  });
  expect(res.status).toBe(201);
  return res.body.executionId as string;
}

const nodeState = (p: Page, id: string) => p.locator(`[data-node="${id}"]`).getAttribute('data-state');
const timelinePositions = (p: Page) =>
  p.locator('[data-testid="timeline"] li').evaluateAll((items) => items.map((li) => li.getAttribute('data-position')));

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium)`);
  t = await startTestApp('pglite', {}, { worker: true });
  t.app.get<TokenRegistry>(TOKEN_REGISTRY, { strict: false }).replace(ENTRIES);
  liveOf(t.app).tune({ retryMs: 200 });
  // Knows the sockets of the event streams opened from now on.
  dropStreams = dropperOfStreams(t.app.getHttpServer());
  api = client(t.url);
  for (const [name, graph] of [
    ['demo', slowDemo],
    ['hold', longDelay],
    ['approve-payment', approval],
    ['ship', shipping],
  ] as const) {
    const res = await api.put(`/v1/workspaces/ws-a/workflows/${name}`, { token: TOKENS.adminA, body: graph });
    expect(res.status).toBe(201);
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  admin = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await signedIn(admin, ROOT);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the web console in a browser', () => {
  it('signs in over http://127.0.0.1 with a __Host- cookie, which Chromium takes from loopback although it is Secure', async () => {
    const cookies = (await admin.cookies(t.url)).filter((cookie) => cookie.name.includes('flostra_session'));
    expect(cookies).toEqual([
      expect.objectContaining({ name: '__Host-flostra_session', secure: true, httpOnly: true, sameSite: 'Strict', path: '/' }),
    ]);
    expect(new URL(t.url).protocol).toBe('http:');
  });

  it('starts the demo, colours every node live, and survives a dropped stream without a repeated entry', async () => {
    await page.getByRole('link', { name: 'demo' }).click();
    await page.getByTestId('dag').locator('.react-flow__node').first().waitFor();
    await shot(page, 'workflow');
    await page.getByRole('button', { name: 'Start execution' }).click();
    await page.waitForURL(/\/console\/executions\/[0-9a-f-]{36}$/);
    const executionId = page.url().split('/').pop()!;
    await eventually(async () => (await nodeState(page, 'fetch')) === 'succeeded', 'the first node to turn green');

    // The stream drops mid-run (the server cuts it) and stays unreachable until the run is over.
    await page.route('**/v1/executions/*/events*', (route) => route.abort());
    try {
      dropStreams();
      expect(await nodeState(page, 'done')).toBe('pending');
      await eventually(async () => (await page.getByTestId('live').getAttribute('data-connected')) === 'false', 'the console to notice');
      await eventually(async () => (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.adminA })).body.status === 'succeeded', {
        what: 'the run to finish while the console is cut off',
        timeoutMs: 20_000,
      });
    } finally {
      await page.unroute('**/v1/executions/*/events*');
    }

    for (const id of ['fetch', 'wait', 'shape', 'done']) {
      await eventually(async () => (await nodeState(page, id)) === 'succeeded', `${id} to turn green without a reload`);
    }
    await page.locator('[data-testid="timeline"] li[data-type="ExecutionSucceeded"]').waitFor();
    const history = await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.adminA });
    const shown = await timelinePositions(page);
    expect(new Set(shown).size).toBe(shown.length);
    expect(shown).toEqual(history.body.events.map((e: { position: string }) => e.position));
    await page.locator('[data-node="shape"]').click();
    await page.getByTestId('node-panel').getByText('hello world').waitFor();
    await shot(page, 'execution');
  });

  it('cancels an execution waiting on a durable delay', async () => {
    const executionId = await startWith('hold');
    await page.goto(`${t.url}/console/executions/${executionId}`);
    await eventually(async () => (await nodeState(page, 'hold')) === 'waiting', 'the delay to wait for its timer');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.locator('h2 .badge.status-cancelled').waitFor({ timeout: 20_000 });
    expect((await api.get(`/v1/executions/${executionId}`, { token: TOKENS.adminA })).body.status).toBe('cancelled');
    await page.getByRole('button', { name: 'Redrive' }).waitFor();
  });

  it('draws a task node waiting, with its queue and claim, and lists its task’s events', async () => {
    const executionId = await startWith('ship');
    await page.goto(`${t.url}/console/executions/${executionId}`);
    await eventually(async () => (await nodeState(page, 'ship')) === 'waiting', 'the task node to wait');
    await page.locator('h2 .badge.status-waiting').waitFor({ timeout: 20_000 });
    const wait = page.getByTestId('dag-wait');
    await eventually(async () => (await wait.textContent()) === 'task on queue shipping', 'what it waits for');
    const polled = await api.post('/v1/workspaces/ws-a/task-queues/shipping/poll', {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'poller-1', waitMs: 5_000 },
    });
    expect(polled.status).toBe(200);
    await eventually(async () => (await wait.textContent()) === 'task on queue shipping · claimed by poller-1', 'the claim to show');
    await shot(page, 'task-waiting');
    const done = await api.post(`/v1/tasks/${polled.body.taskId}/complete`, {
      token: TOKENS.taskWorkerA,
      body: { workerId: 'poller-1', fencingToken: polled.body.fencingToken, outcome: 'succeeded', output: { parcel: 1 } },
    });
    expect(done.status).toBe(200);
    await eventually(async () => (await nodeState(page, 'ship')) === 'succeeded', 'the task node to succeed');
    await page.locator('h2 .badge.status-succeeded').waitFor({ timeout: 20_000 });
    await expect(page.locator('[data-testid="timeline"] li[data-type="TaskClaimed"]').textContent()).resolves.toContain(
      'ship · claimed by poller-1',
    );
  });

  it('approves with the digest of the exact action shown', async () => {
    const executionId = await startWith('approve-payment');
    await page.goto(`${t.url}/console/executions/${executionId}`);
    const card = page.getByTestId('approval');
    await card.waitFor({ timeout: 20_000 });
    const pending = (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.adminA })).body.pendingApproval;
    expect(await card.getByTestId('action-digest').textContent()).toBe(pending.actionDigest);
    await expect(card.textContent()).resolves.toContain('ACME Corp');
    await shot(page, 'approval');
    await card.getByRole('button', { name: 'Approve' }).click();
    await page.locator('h2 .badge.status-succeeded').waitFor({ timeout: 20_000 });
    const decided = (await api.get(`/v1/executions/${executionId}/history?limit=1000`, { token: TOKENS.adminA })).body.events.find(
      (e: { type: string }) => e.type === 'ApprovalGranted',
    );
    expect(decided.data).toMatchObject({ actionDigest: pending.actionDigest, decidedBy: 'ada' });
  });

  it('lists executions with filters, and shows the read models to a system admin', async () => {
    await page.goto(`${t.url}/console/workspaces/ws-a/executions?status=succeeded`);
    await page.getByTestId('executions').waitFor();
    const statuses = await page.locator('[data-testid="executions"] tbody .badge').allTextContents();
    expect(statuses.length).toBeGreaterThanOrEqual(2);
    expect(new Set(statuses)).toEqual(new Set(['succeeded']));
    await shot(page, 'executions');
    await page.getByRole('link', { name: 'Admin' }).click();
    await page.locator('[data-projection="executions"]').waitFor();
    await shot(page, 'admin');
    await page.getByRole('link', { name: 'Workflows' }).click();
    await page.getByRole('link', { name: 'approve-payment' }).waitFor();
    await shot(page, 'workflows');
  });

  it('offers a viewer no write, and refuses forged writes from any session', async () => {
    const executionId = await startWith('hold');
    const viewerContext = await browser.newContext();
    const viewer = await signedIn(viewerContext, VIEWER);
    await viewer.goto(`${t.url}/console/executions/${executionId}`);
    await viewer.getByTestId('dag').locator('.react-flow__node').first().waitFor();
    await eventually(async () => (await nodeState(viewer, 'hold')) === 'waiting', 'the viewer to see it wait');
    expect(await viewer.getByRole('button', { name: /Cancel|Redrive|Approve|Reject/ }).count()).toBe(0);
    await viewer.goto(`${t.url}/console/workspaces/ws-a/workflows/demo`);
    await viewer.getByTestId('dag').waitFor();
    expect(await viewer.getByRole('button', { name: /Start execution|Publish/ }).count()).toBe(0);
    await viewer.goto(`${t.url}/console/admin`);
    await viewer.getByText('The admin page needs the global system-admin role.').waitFor();

    const forge = (p: Page, csrf: 'none' | 'wrong' | 'own') =>
      p.evaluate(
        async ({ path, csrf }) => {
          const headers: Record<string, string> = { 'content-type': 'application/json' };
          if (csrf === 'wrong') headers['x-flostra-csrf'] = 'forged-value';
          if (csrf === 'own') headers['x-flostra-csrf'] = ((await (await fetch('/v1/sessions/csrf')).json()) as { csrf: string }).csrf;
          const res = await fetch(path, {
            method: 'POST',
            headers,
            body: JSON.stringify({ reason: 'forged' }),
            credentials: 'same-origin',
          });
          return { status: res.status, code: ((await res.json()) as { code: string }).code };
        },
        { path: `/v1/executions/${executionId}/cancel`, csrf },
      );
    expect(await forge(viewer, 'none')).toEqual({ status: 403, code: 'csrf_required' });
    expect(await forge(viewer, 'own')).toEqual({ status: 403, code: 'forbidden' });
    expect(await forge(page, 'none')).toEqual({ status: 403, code: 'csrf_required' });
    expect(await forge(page, 'wrong')).toEqual({ status: 403, code: 'csrf_required' });
    const after = (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.adminA })).body;
    expect(after).toMatchObject({ status: 'waiting', cancelRequested: false });
    await viewerContext.close();
    await api.post(`/v1/executions/${executionId}/cancel`, { token: TOKENS.adminA, body: {} });
    expect(cspViolations).toEqual([]);
  });
});
