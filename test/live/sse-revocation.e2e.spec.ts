import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, sleep } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { chainWorkflow } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, type TestApp } from '../support/test-app.js';
import { SseStream } from './sse-test-client.js';

/**
 * Revocation as an operator does it: the app reads FLOSTRA_TOKENS_FILE and follows it; this
 * suite rewrites the file in place or replaces it by rename, never calling the registry, and
 * asserts what clients notice: the next request of a removed token is 401, a lowered role's write
 * is refused, an open stream whose grant is gone ends within 2 s, and an invalid file changes
 * nothing. The viewer's token is in the file as its SHA-256 digest only.
 */

const ADMIN = 'revocation-admin-token-0001';
const OPERATOR = 'revocation-operator-token-01';
const EDITOR = 'revocation-editor-token-0001';
const VIEWER = 'revocation-viewer-token-0001';
const WORKER = 'revocation-worker-token-0001';
/** How long an open stream may outlive the change that revoked its grant. */
const STREAM_END_MS = 2_000;

type Roles = Record<string, 'viewer' | 'operator' | 'editor' | 'admin'>;
interface Grants {
  admin: Roles;
  operator: Roles;
  editor: Roles | null;
  viewer: Roles | null;
}
const ALL: Grants = {
  admin: { 'ws-a': 'admin' },
  operator: { 'ws-a': 'operator' },
  editor: { 'ws-a': 'editor' },
  viewer: { 'ws-a': 'viewer' },
};

function tokensFile(grants: Grants): string {
  const tokens: object[] = [
    { token: ADMIN, subject: 'alice', workspaces: grants.admin },
    { token: OPERATOR, subject: 'oscar', workspaces: grants.operator },
    { token: WORKER, subject: 'worker', global: ['worker'] },
  ];
  if (grants.editor !== null) tokens.push({ token: EDITOR, subject: 'eve', workspaces: grants.editor });
  if (grants.viewer !== null)
    tokens.push({ tokenSha256: createHash('sha256').update(VIEWER).digest('hex'), subject: 'victor', workspaces: grants.viewer });
  return `${JSON.stringify({ tokens }, null, 2)}\n`;
}

/** Never more than STREAM_END_MS: the promise this suite checks. */
function endsSoon(stream: SseStream, what: string): Promise<unknown> {
  let ended = false;
  void stream.ended.then(() => (ended = true));
  return eventually(() => ended, { what, timeoutMs: STREAM_END_MS, intervalMs: 10 });
}

describe.each(STORE_KINDS)('revoking through the tokens file, on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;
  let dir: string;
  let path: string;

  /** Truncates and rewrites the file: its inode stays. */
  const rewriteInPlace = (content: string) => writeFile(path, content);
  /** Writes a new file beside it and renames it over the old one, as editors and deploy tools do. */
  const replaceByRename = async (content: string) => {
    const aside = join(dir, `tokens.json.${Date.now()}.tmp`);
    await writeFile(aside, content);
    await rename(aside, path);
  };
  const status = async (token: string, url = '/v1/workspaces/ws-a/executions') => (await api.get(url, { token })).status;

  /** A running execution: started by the operator, claimed by the worker. */
  async function running() {
    const started = await api.post('/v1/workspaces/ws-a/workflows/chain/executions', { token: OPERATOR, body: {} });
    expect(started.status).toBe(201);
    const executionId = started.body.executionId as string;
    const view = await api.get(`/v1/executions/${executionId}`, { token: ADMIN });
    const attempt = `/v1/executions/${executionId}/attempts/${view.body.attempts[0].attemptId}`;
    const claimed = await api.post(`${attempt}/claim`, { token: WORKER, body: { workerId: 'w1' } });
    expect(claimed.status).toBe(200);
    const fence = { workerId: 'w1', fencingToken: claimed.body.fencingToken as number };
    return {
      executionId,
      /** Appends a LeaseExtended. */
      heartbeat: async () => expect((await api.post(`${attempt}/heartbeat`, { token: WORKER, body: fence })).status).toBe(200),
    };
  }

  const openStream = async (url: string, token: string) => {
    const stream = await SseStream.open(`${t.url}${url}`, { token });
    expect(stream.status).toBe(200);
    return stream;
  };

  /** Puts every grant back and waits until the app has it. */
  async function restoreAll() {
    await replaceByRename(tokensFile(ALL));
    await eventually(async () => {
      for (const token of [VIEWER, EDITOR, OPERATOR]) if ((await status(token)) !== 200) return false;
      return true;
    }, 'every grant to be back');
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flostra-revocation-'));
    path = join(dir, 'tokens.json');
    await writeFile(path, tokensFile(ALL));
    t = await startTestApp(kind, { FLOSTRA_TOKENS_FILE: path });
    api = client(t.url);
    expect((await api.put('/v1/workspaces/ws-a/workflows/chain', { token: ADMIN, body: chainWorkflow() })).status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps a stream open while the file changes without touching its grant', async () => {
    await restoreAll();
    const run = await running();
    const stream = await openStream(`/v1/executions/${run.executionId}/events`, VIEWER);
    await stream.until((s) => s.messages.some((m) => m.event === 'AttemptClaimed'));
    await replaceByRename(tokensFile({ ...ALL, editor: null }));
    await eventually(async () => (await status(EDITOR)) === 401, 'the editor to be revoked');
    await run.heartbeat();
    await stream.until((s) => s.messages.some((m) => m.event === 'LeaseExtended'), 'an event after the unrelated change');
    stream.close();
  });

  it('a removed token (file rewritten in place): its streams end within 2 s, and it is refused from the next request', async () => {
    await restoreAll();
    const run = await running();
    const execution = await openStream(`/v1/executions/${run.executionId}/events`, VIEWER);
    const workspace = await openStream('/v1/workspaces/ws-a/events', VIEWER);
    await execution.until((s) => s.messages.length > 0);
    await workspace.until((s) => s.comments.length > 0);

    await rewriteInPlace(tokensFile({ ...ALL, viewer: null }));
    await Promise.all([endsSoon(execution, 'the execution stream to end'), endsSoon(workspace, 'the workspace stream to end')]);
    expect(execution.comments).toContain('stream ended: grant revoked');
    expect(workspace.comments).toContain('stream ended: grant revoked');

    const next = await api.get(`/v1/executions/${run.executionId}`, { token: VIEWER });
    expect(next.status).toBe(401);
    expect(next.body.code).toBe('unauthenticated');
    const again = await SseStream.open(`${t.url}/v1/workspaces/ws-a/events`, { token: VIEWER });
    await again.ended;
    expect(again.status).toBe(401);
    expect(await status(ADMIN)).toBe(200);
  });

  it('a lowered role (file replaced by rename): its writes are refused, and a stream it may no longer see ends within 2 s', async () => {
    await restoreAll();
    const run = await running();
    const editorStream = await openStream(`/v1/executions/${run.executionId}/events`, EDITOR);
    const operatorStream = await openStream('/v1/workspaces/ws-a/events', OPERATOR);
    await editorStream.until((s) => s.messages.length > 0);
    await operatorStream.until((s) => s.comments.length > 0);

    // The editor becomes a viewer of ws-a; the operator keeps a role in ws-b only.
    await replaceByRename(tokensFile({ ...ALL, editor: { 'ws-a': 'viewer' }, operator: { 'ws-b': 'operator' } }));
    await endsSoon(operatorStream, "the operator's stream to end");
    expect(operatorStream.comments).toContain('stream ended: grant revoked');

    const publish = await api.put('/v1/workspaces/ws-a/workflows/chain', { token: EDITOR, body: chainWorkflow() });
    expect(publish.status).toBe(403);
    expect(publish.body).toMatchObject({ code: 'forbidden', requiredRole: 'editor' });
    expect((await api.post(`/v1/executions/${run.executionId}/cancel`, { token: EDITOR, body: {} })).status).toBe(403);
    // Losing the workspace altogether: the execution is the same 404 as a missing one.
    expect((await api.post(`/v1/executions/${run.executionId}/cancel`, { token: OPERATOR, body: {} })).status).toBe(404);
    expect((await api.post('/v1/workspaces/ws-a/workflows/chain/executions', { token: OPERATOR, body: {} })).status).toBe(404);

    // A viewer may still watch: the editor's stream stays open and keeps receiving.
    await run.heartbeat();
    await editorStream.until((s) => s.messages.some((m) => m.event === 'LeaseExtended'), 'an event after the role was lowered');
    editorStream.close();
  });

  it('an invalid file (not JSON, a repeated token) changes nothing, and the next valid one applies', async () => {
    await restoreAll();
    const run = await running();
    const stream = await openStream(`/v1/executions/${run.executionId}/events`, VIEWER);
    await stream.until((s) => s.messages.length > 0);

    // Each would revoke the viewer if it were applied. The pause lets the app read each file on
    // its own; on a slower machine two may be read as one, which only makes the test weaker.
    await rewriteInPlace(tokensFile({ ...ALL, viewer: null }).replace('"tokens"', 'tokens'));
    await sleep(1_000);
    const repeated = JSON.parse(tokensFile({ ...ALL, viewer: null }));
    repeated.tokens.push({ ...repeated.tokens[0], subject: 'mallory' });
    await replaceByRename(JSON.stringify(repeated));
    await sleep(1_000);
    expect(await status(VIEWER)).toBe(200);
    expect(await status(EDITOR)).toBe(200);

    // The next valid file applies (the editor goes), and the viewer's stream never noticed a thing.
    await replaceByRename(tokensFile({ ...ALL, editor: null }));
    await eventually(async () => (await status(EDITOR)) === 401, 'the next valid file to apply');
    expect(await status(VIEWER)).toBe(200);
    await run.heartbeat();
    await stream.until((s) => s.messages.some((m) => m.event === 'LeaseExtended'), 'an event after the invalid files');
    expect(stream.comments).not.toContain('stream ended: grant revoked');
    stream.close();
  });
});
