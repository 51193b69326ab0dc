import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { TokenEntry } from '../../src/auth/tokens-file.schema.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';
import { liveOf, startAndClaim } from './live-scenario.js';
import { SseStream } from './sse-test-client.js';

// The grants of test/support/test-app.ts that this suite keeps while it revokes others.
const grant = (token: string, subject: string, workspaces: TokenEntry['workspaces'], global: TokenEntry['global'] = []): TokenEntry => ({
  token,
  subject,
  workspaces,
  global,
});
const KEPT = [
  grant(TOKENS.adminA, 'alice', { 'ws-a': 'admin' }),
  grant(TOKENS.operatorA, 'oscar', { 'ws-a': 'operator' }),
  grant(TOKENS.worker, 'worker', {}, ['worker']),
];
const VIEWER = grant(TOKENS.viewerA, 'victor', { 'ws-a': 'viewer' });
const EDITOR = grant(TOKENS.editorA, 'eve', { 'ws-a': 'editor' });

describe.each(STORE_KINDS)('an open SSE stream whose grant changes, on %s', (kind) => {
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp(kind);
    api = client(t.url);
    await publish(api, 'chain');
  });
  afterAll(() => t?.close());

  it('stays open while the registry changes without touching its grant', async () => {
    const { registry } = liveOf(t.app);
    registry.replace([...KEPT, VIEWER, EDITOR]);
    const run = await startAndClaim(api, 'chain');
    const stream = await SseStream.open(`${t.url}/v1/executions/${run.executionId}/events`, { token: TOKENS.viewerA });
    await stream.until((s) => s.messages.some((m) => m.event === 'AttemptClaimed'));
    registry.replace([...KEPT, VIEWER]);
    await run.heartbeat();
    await stream.until((s) => s.messages.some((m) => m.event === 'LeaseExtended'), 'an event after the unrelated change');
    stream.close();
  });

  it('ends when the token is revoked, and the token no longer connects', async () => {
    const { registry } = liveOf(t.app);
    registry.replace([...KEPT, VIEWER]);
    const run = await startAndClaim(api, 'chain');
    const execution = await SseStream.open(`${t.url}/v1/executions/${run.executionId}/events`, { token: TOKENS.viewerA });
    const workspace = await SseStream.open(`${t.url}/v1/workspaces/ws-a/events`, { token: TOKENS.viewerA });
    await execution.until((s) => s.messages.length > 0);
    await workspace.until((s) => s.comments.length > 0);
    registry.replace(KEPT);
    await Promise.all([execution.ended, workspace.ended]);
    expect(execution.comments).toContain('stream ended: grant revoked');
    expect(workspace.comments).toContain('stream ended: grant revoked');
    const again = await SseStream.open(`${t.url}/v1/workspaces/ws-a/events`, { token: TOKENS.viewerA });
    await again.ended;
    expect(again.status).toBe(401);
    registry.replace([...KEPT, VIEWER]);
  });

  it("ends when the token loses its role in the stream's workspace", async () => {
    const { registry } = liveOf(t.app);
    registry.replace([...KEPT, VIEWER, EDITOR]);
    const run = await startAndClaim(api, 'chain');
    const stream = await SseStream.open(`${t.url}/v1/executions/${run.executionId}/events`, { token: TOKENS.editorA });
    await stream.until((s) => s.messages.length > 0);
    registry.replace([...KEPT, VIEWER, grant(TOKENS.editorA, 'eve', { 'ws-b': 'editor' })]);
    await stream.ended;
    expect(stream.comments).toContain('stream ended: grant revoked');
  });
});
