import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { client, type ApiClient, type HttpResult, type RequestOptions } from '../support/http-client.js';
import { chainWorkflow, publish, start } from '../support/scenario.js';
import { STORE_KINDS, startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Promise 11 (docs/architecture.md): bad input gets a clear error and changes nothing. Every request below is wrong in
 * one way; each must answer its 4xx as problem+json with a stable code and a detail that says
 * what is wrong, and none may append anything to the log.
 */

const WORKFLOW = 'orders';
const IDEMPOTENCY_KEY = 'bad-input-setup';
const MISSING_EXECUTION = '0b9c5d2e-7f41-4c3a-9d8e-2a6b1c0f5e73';
const MIB = 1024 * 1024;

interface Setup {
  executionId: string;
  attemptId: string;
}

interface Request extends RequestOptions {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
}

interface Expected {
  /** Matched against the problem's `detail`. */
  detail?: RegExp;
  /** At least one entry of the problem's `issues` matches both. */
  issue?: { path: string | RegExp; message: RegExp };
}

interface BadRequestCase extends Expected {
  name: string;
  status: number;
  code: string;
  request: (setup: Setup) => Request;
}

const json = (contentType: string) => ({ 'content-type': contentType });
const executions = `/v1/workspaces/ws-a/workflows/${WORKFLOW}/executions`;
const workflowPath = (name: string, workspace = 'ws-a') => `/v1/workspaces/${workspace}/workflows/${name}`;
const attemptPath = (s: Setup, action: string) => `/v1/executions/${s.executionId}/attempts/${s.attemptId}/${action}`;

/** A publish of `graph` by someone allowed to publish: only the graph is wrong. */
const publishing =
  (graph: unknown, name = 'rejected'): (() => Request) =>
  () => ({
    method: 'PUT',
    path: workflowPath(name),
    token: TOKENS.editorA,
    body: graph,
  });

/** A start of the setup's workflow by an operator: only the body or the headers are wrong. */
const starting =
  (options: Omit<Request, 'method' | 'path'>): (() => Request) =>
  () => ({
    method: 'POST',
    path: executions,
    token: TOKENS.operatorA,
    ...options,
  });

const noops = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `n${i}`, type: 'noop' }));

const CASES: BadRequestCase[] = [
  // The body as a whole
  {
    name: 'malformed JSON',
    status: 400,
    code: 'validation_failed',
    request: starting({ rawBody: '{"input":', headers: json('application/json') }),
    detail: /^malformed JSON body/,
  },
  {
    name: 'a JSON array where an object is expected',
    status: 400,
    code: 'validation_failed',
    request: starting({ body: [{ input: {} }] }),
    issue: { path: 'body', message: /object/ },
  },
  {
    name: 'a JSON string where an object is expected',
    status: 400,
    code: 'validation_failed',
    request: starting({ rawBody: '"start please"', headers: json('application/json') }),
    detail: /JSON/,
  },
  {
    name: 'a JSON array as a workflow graph',
    status: 400,
    code: 'validation_failed',
    request: publishing([{ id: 'a', type: 'noop' }]),
    detail: /object/,
  },
  {
    name: 'a body over the 1 MiB limit',
    status: 413,
    code: 'payload_too_large',
    request: starting({ body: { input: { pad: 'x'.repeat(MIB + 1) } } }),
    detail: /exceeds the limit of 1048576 bytes/,
  },
  {
    name: 'a text/plain body',
    status: 415,
    code: 'unsupported_media_type',
    request: starting({ rawBody: 'input=1', headers: json('text/plain') }),
    detail: /application\/json.*text\/plain/,
  },
  {
    name: 'a form-urlencoded body',
    status: 415,
    code: 'unsupported_media_type',
    request: starting({ rawBody: 'input=1', headers: json('application/x-www-form-urlencoded') }),
    detail: /application\/x-www-form-urlencoded/,
  },
  {
    name: 'bytes that are not UTF-8 in a JSON body',
    status: 400,
    code: 'validation_failed',
    // "café" with its é in Latin-1: one byte 0xE9 that UTF-8 does not allow where it stands.
    request: starting({ rawBody: Buffer.from('{"input":{"note":"caf\xe9"}}', 'latin1'), headers: json('application/json') }),
    detail: /not valid UTF-8/,
    issue: { path: 'body', message: /not valid UTF-8/ },
  },
  // Text and shapes the store cannot hold (each was a 500 at the append)
  {
    name: 'a NUL character in an input string',
    status: 400,
    code: 'validation_failed',
    request: starting({ rawBody: '{"input":{"note":"a\\u0000b"}}', headers: json('application/json') }),
    issue: { path: 'body.input.note', message: /U\+0000/ },
  },
  {
    name: 'a NUL character in an input field name',
    status: 400,
    code: 'validation_failed',
    request: starting({ rawBody: '{"input":{"a\\u0000":1}}', headers: json('application/json') }),
    issue: { path: 'body.input', message: /field names cannot contain U\+0000/ },
  },
  {
    name: 'an unpaired surrogate in an input string',
    status: 400,
    code: 'validation_failed',
    request: starting({ rawBody: '{"input":{"note":"\\ud800"}}', headers: json('application/json') }),
    issue: { path: 'body.input.note', message: /unpaired surrogates/ },
  },
  {
    name: 'an input nested 5000 levels deep',
    status: 400,
    code: 'validation_failed',
    request: starting({ rawBody: `{"input":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`, headers: json('application/json') }),
    issue: { path: /^body\.input(\.a)+$/, message: /nested deeper than 128 levels/ },
  },
  {
    name: 'a NUL character in a transform expression',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'a', type: 'transform', config: { expression: '$.input\u0000' } }] }),
    issue: { path: 'body.nodes.0.config.expression', message: /U\+0000/ },
  },
  {
    name: 'a completion whose output is nested 5000 levels deep',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({
      method: 'POST',
      path: attemptPath(s, 'complete'),
      token: TOKENS.worker,
      rawBody: `{"workerId":"w-1","fencingToken":1,"outcome":"succeeded","output":${'['.repeat(5000)}${']'.repeat(5000)}}`,
      headers: json('application/json'),
    }),
    issue: { path: /^body\.output(\.0)+$/, message: /nested deeper than 128 levels/ },
  },
  // Field types and unknown fields
  {
    name: 'input that is not an object',
    status: 400,
    code: 'validation_failed',
    request: starting({ body: { input: 42 } }),
    issue: { path: 'body.input', message: /object|record/ },
  },
  {
    name: 'revision as a string',
    status: 400,
    code: 'validation_failed',
    request: starting({ body: { input: {}, revision: '1' } }),
    issue: { path: 'body.revision', message: /number/ },
  },
  {
    name: 'an unknown top-level field in a start',
    status: 400,
    code: 'validation_failed',
    request: starting({ body: { input: {}, priority: 'high' } }),
    issue: { path: 'body', message: /priority/ },
  },
  {
    name: 'an unknown top-level field in a graph',
    status: 400,
    code: 'validation_failed',
    request: publishing({ ...chainWorkflow(), owner: 'me' }),
    issue: { path: 'owner', message: /unknown field/ },
  },
  {
    name: 'a node with an extra key',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'a', type: 'noop', colour: 'red' }], edges: [] }),
    issue: { path: 'nodes[0].colour', message: /unknown field/ },
  },
  {
    name: 'a heartbeat whose fencingToken is a string',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({
      method: 'POST',
      path: attemptPath(s, 'heartbeat'),
      token: TOKENS.worker,
      body: { workerId: 'w-1', fencingToken: 'x' },
    }),
    issue: { path: 'body.fencingToken', message: /number/ },
  },
  {
    name: 'a claim with an empty workerId',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({ method: 'POST', path: attemptPath(s, 'claim'), token: TOKENS.worker, body: { workerId: '' } }),
    issue: { path: 'body.workerId', message: /1|empty|short/ },
  },
  {
    name: 'a completion with outcome "failed" but no error',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({
      method: 'POST',
      path: attemptPath(s, 'complete'),
      token: TOKENS.worker,
      body: { workerId: 'w-1', fencingToken: 1, outcome: 'failed' },
    }),
    issue: { path: 'body.error', message: /error is required when outcome is failed/ },
  },
  // Graphs
  {
    name: 'a cyclic graph',
    status: 400,
    code: 'validation_failed',
    request: publishing({
      nodes: [
        { id: 'a', type: 'noop' },
        { id: 'b', type: 'noop' },
      ],
      edges: [
        { from: 'a', to: 'b' },
        { from: 'b', to: 'a' },
      ],
    }),
    issue: { path: 'edges', message: /^cycle: a → b → a$/ },
  },
  {
    name: 'a self-loop',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'a', type: 'noop' }], edges: [{ from: 'a', to: 'a' }] }),
    issue: { path: 'edges[0]', message: /self-loop on node "a"/ },
  },
  {
    name: 'duplicate node ids',
    status: 400,
    code: 'validation_failed',
    request: publishing({
      nodes: [
        { id: 'a', type: 'noop' },
        { id: 'a', type: 'noop' },
      ],
    }),
    issue: { path: 'nodes[1].id', message: /duplicate node id "a"/ },
  },
  {
    name: 'an edge to a missing node',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'a', type: 'noop' }], edges: [{ from: 'a', to: 'ghost' }] }),
    issue: { path: 'edges[0].to', message: /unknown node "ghost"/ },
  },
  {
    name: 'an unknown node type',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'a', type: 'teleport' }] }),
    issue: { path: 'nodes[0].type', message: /unknown node type; expected one of noop, delay/ },
  },
  {
    name: 'a switch whose target is not its direct successor',
    status: 400,
    code: 'validation_failed',
    request: publishing({
      nodes: [
        { id: 'route', type: 'switch', config: { cases: [{ when: 'input.vip', to: ['far'] }] } },
        { id: 'far', type: 'noop' },
      ],
    }),
    issue: { path: 'nodes[0].config.cases[0].to[0]', message: /not a direct successor of switch "route"/ },
  },
  {
    name: 'a map whose items expression does not parse',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'each', type: 'map', config: { items: 'input.orders[', node: { type: 'noop' } } }] }),
    issue: { path: 'nodes[0].config.items', message: /does not parse/ },
  },
  {
    name: 'a delay node with a negative ms',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'wait', type: 'delay', config: { ms: -5 } }] }),
    issue: { path: 'nodes[0].config.ms', message: /0|greater|small/ },
  },
  {
    name: 'a graph of 501 nodes',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: noops(501) }),
    issue: { path: 'nodes', message: /too many nodes: 501; the limit is 500/ },
  },
  {
    name: 'a graph over 256 KiB',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'ok', type: 'approval', config: { action: { blob: 'x'.repeat(300 * 1024) } } }] }),
    issue: { path: '', message: /the limit is 262144/ },
  },
  {
    name: 'a graph without nodes',
    status: 400,
    code: 'validation_failed',
    request: publishing({}),
    issue: { path: 'nodes', message: /array/ },
  },
  // Path parameters
  {
    name: 'an executionId that is not a uuid',
    status: 400,
    code: 'validation_failed',
    request: () => ({ method: 'GET', path: '/v1/executions/not-a-uuid', token: TOKENS.viewerA }),
    issue: { path: 'params.executionId', message: /UUID/ },
  },
  {
    name: 'a cancel of an executionId that is not a uuid',
    status: 400,
    code: 'validation_failed',
    request: () => ({ method: 'POST', path: '/v1/executions/12345/cancel', token: TOKENS.operatorA, body: {} }),
    issue: { path: 'params.executionId', message: /UUID/ },
  },
  {
    name: 'an attemptId that is not a uuid',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({
      method: 'POST',
      path: `/v1/executions/${s.executionId}/attempts/attempt-1/claim`,
      token: TOKENS.worker,
      body: { workerId: 'w-1' },
    }),
    issue: { path: 'params.attemptId', message: /UUID/ },
  },
  {
    name: 'a workspace id with an invalid character (publish)',
    status: 400,
    code: 'validation_failed',
    request: () => ({ method: 'PUT', path: workflowPath('rejected', 'ws!'), token: TOKENS.editorA, body: chainWorkflow() }),
    issue: { path: 'params.workspaceId', message: /A-Z, a-z, 0-9/ },
  },
  {
    name: 'a workspace id with an invalid character (start)',
    status: 400,
    code: 'validation_failed',
    request: () => ({ method: 'POST', path: `/v1/workspaces/ws!/workflows/${WORKFLOW}/executions`, token: TOKENS.operatorA, body: {} }),
    issue: { path: 'params.workspaceId', message: /A-Z, a-z, 0-9/ },
  },
  {
    name: 'a workflow name of 65 characters',
    status: 400,
    code: 'validation_failed',
    request: publishing(chainWorkflow(), 'w'.repeat(65)),
    issue: { path: 'params.name', message: /1-64 characters/ },
  },
  // Query parameters
  {
    name: 'history with limit=0',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({ method: 'GET', path: `/v1/executions/${s.executionId}/history?limit=0`, token: TOKENS.viewerA }),
    issue: { path: 'query.limit', message: /1|small|greater/ },
  },
  {
    name: 'history with limit=abc',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({ method: 'GET', path: `/v1/executions/${s.executionId}/history?limit=abc`, token: TOKENS.viewerA }),
    issue: { path: 'query.limit', message: /number/ },
  },
  {
    name: 'history with an unknown query parameter',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({ method: 'GET', path: `/v1/executions/${s.executionId}/history?sort=desc`, token: TOKENS.viewerA }),
    issue: { path: 'query', message: /sort/ },
  },
  {
    name: 'history after a position of no event of the execution',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({ method: 'GET', path: `/v1/executions/${s.executionId}/history?after=nowhere`, token: TOKENS.viewerA }),
    issue: { path: 'after', message: /unknown position/ },
  },
  {
    name: 'a workflow read with revision=first',
    status: 400,
    code: 'validation_failed',
    request: () => ({ method: 'GET', path: `${workflowPath(WORKFLOW)}?revision=first`, token: TOKENS.viewerA }),
    issue: { path: 'query.revision', message: /number/ },
  },
  // Headers
  {
    name: 'an Idempotency-Key of 256 characters',
    status: 400,
    code: 'validation_failed',
    request: starting({ body: { input: {} }, headers: { 'idempotency-key': 'k'.repeat(256) } }),
    issue: { path: 'Idempotency-Key', message: /255|big|long/ },
  },
  {
    name: 'an Idempotency-Key with spaces',
    status: 400,
    code: 'validation_failed',
    request: starting({ body: { input: {} }, headers: { 'idempotency-key': 'two words' } }),
    issue: { path: 'Idempotency-Key', message: /visible ASCII characters only/ },
  },
  {
    name: 'an Idempotency-Key with a control character',
    status: 400,
    code: 'validation_failed',
    request: starting({ body: { input: {} }, headers: { 'idempotency-key': 'tab\there' } }),
    issue: { path: 'Idempotency-Key', message: /visible ASCII characters only/ },
  },
  {
    name: 'a redrive without Idempotency-Key',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({ method: 'POST', path: `/v1/executions/${s.executionId}/redrive`, token: TOKENS.operatorA, body: {} }),
    issue: { path: 'Idempotency-Key', message: /required/ },
  },
  {
    name: "the setup's Idempotency-Key with another body",
    status: 409,
    code: 'idempotency_conflict',
    request: starting({ body: { input: { other: true } }, headers: { 'idempotency-key': IDEMPOTENCY_KEY } }),
    detail: /different request/,
  },
  // Things that do not exist
  {
    name: 'a start of a workflow that does not exist',
    status: 404,
    code: 'not_found',
    request: () => ({ method: 'POST', path: '/v1/workspaces/ws-a/workflows/nope/executions', token: TOKENS.operatorA, body: {} }),
    detail: /workflow nope not found/,
  },
  {
    name: 'a start of a revision that does not exist',
    status: 404,
    code: 'not_found',
    request: starting({ body: { revision: 7 } }),
    detail: /revision 7 of workflow orders not found/,
  },
  {
    name: 'a cancel of an execution that does not exist',
    status: 404,
    code: 'not_found',
    request: () => ({ method: 'POST', path: `/v1/executions/${MISSING_EXECUTION}/cancel`, token: TOKENS.operatorA, body: {} }),
    detail: /^execution not found$/,
  },
  {
    name: 'a claim of an attempt that is not the current one',
    status: 409,
    code: 'stale_attempt',
    request: (s) => ({
      method: 'POST',
      path: `/v1/executions/${s.executionId}/attempts/${MISSING_EXECUTION}/claim`,
      token: TOKENS.worker,
      body: { workerId: 'w-1' },
    }),
    detail: /not the current attempt/,
  },
  // Who is asking
  {
    name: 'a start without a token',
    status: 401,
    code: 'unauthenticated',
    request: starting({ token: null, body: { input: {} } }),
    detail: /missing bearer token/,
  },
  {
    name: 'a start with an unknown token',
    status: 401,
    code: 'unauthenticated',
    request: starting({ token: 'token-nobody-issued', body: { input: {} } }),
    detail: /unknown or revoked bearer token/,
  },
  {
    name: 'a start by a viewer',
    status: 403,
    code: 'forbidden',
    request: starting({ token: TOKENS.viewerA, body: { input: {} } }),
    detail: /requires the operator role in workspace ws-a/,
  },
  {
    name: 'a publish by an operator',
    status: 403,
    code: 'forbidden',
    request: () => ({ ...publishing(chainWorkflow())(), token: TOKENS.operatorA }),
    detail: /requires the editor role/,
  },
  {
    name: 'a start by a worker',
    status: 404,
    code: 'not_found',
    request: starting({ token: TOKENS.worker, body: { input: {} } }),
    detail: /workspace ws-a not found/,
  },
  {
    name: 'a claim by an operator',
    status: 403,
    code: 'forbidden',
    request: (s) => ({ method: 'POST', path: attemptPath(s, 'claim'), token: TOKENS.operatorA, body: { workerId: 'w-1' } }),
    detail: /requires the global worker role/,
  },
  {
    name: 'a start in ws-a with a token of ws-b',
    status: 404,
    code: 'not_found',
    request: starting({ token: TOKENS.adminB, body: { input: {} } }),
    detail: /workspace ws-a not found/,
  },
  {
    name: 'a cancel of a ws-a execution with a token of ws-b',
    status: 404,
    code: 'not_found',
    request: (s) => ({ method: 'POST', path: `/v1/executions/${s.executionId}/cancel`, token: TOKENS.adminB, body: {} }),
    detail: /^execution not found$/,
  },
  // Task queues
  {
    name: 'a task node with a queue name of capitals and spaces',
    status: 400,
    code: 'validation_failed',
    request: publishing({ nodes: [{ id: 'charge', type: 'task', config: { queue: 'Billing Queue' } }] }),
    issue: { path: 'nodes[0].config.queue', message: /queue name/ },
  },
  {
    name: 'a poll of an invalid queue name',
    status: 400,
    code: 'validation_failed',
    request: () => ({
      method: 'POST',
      path: '/v1/workspaces/ws-a/task-queues/-billing/poll',
      token: TOKENS.taskWorkerA,
      body: { workerId: 'p' },
    }),
    issue: { path: 'params.queue', message: /queue name/ },
  },
  {
    name: 'a poll that would wait longer than 30 s',
    status: 400,
    code: 'validation_failed',
    request: () => ({
      method: 'POST',
      path: '/v1/workspaces/ws-a/task-queues/billing/poll',
      token: TOKENS.taskWorkerA,
      body: { workerId: 'p', waitMs: 30_001 },
    }),
    issue: { path: 'body.waitMs', message: /30000/ },
  },
  {
    name: 'a poll by an operator, who lacks the task-worker grant',
    status: 403,
    code: 'forbidden',
    request: () => ({
      method: 'POST',
      path: '/v1/workspaces/ws-a/task-queues/billing/poll',
      token: TOKENS.operatorA,
      body: { workerId: 'p', waitMs: 0 },
    }),
    detail: /task-worker/,
  },
  {
    name: 'a poll of another workspace’s queue',
    status: 404,
    code: 'not_found',
    request: () => ({
      method: 'POST',
      path: '/v1/workspaces/ws-a/task-queues/billing/poll',
      token: TOKENS.taskWorkerB,
      body: { workerId: 'p', waitMs: 0 },
    }),
  },
  {
    name: 'a heartbeat of a task id that names no task',
    status: 404,
    code: 'not_found',
    request: () => ({
      method: 'POST',
      path: '/v1/tasks/not-a-task/heartbeat',
      token: TOKENS.taskWorkerA,
      body: { workerId: 'p', fencingToken: 1 },
    }),
    detail: /^task not found$/,
  },
  {
    name: 'a completion of a task the execution never had',
    status: 404,
    code: 'not_found',
    request: (s) => ({
      method: 'POST',
      path: `/v1/tasks/${s.executionId}.a.1/complete`,
      token: TOKENS.taskWorkerA,
      body: { workerId: 'p', fencingToken: 1, outcome: 'succeeded' },
    }),
    detail: /^task not found$/,
  },
  {
    name: 'a completion of a task of another workspace',
    status: 404,
    code: 'not_found',
    request: (s) => ({
      method: 'POST',
      path: `/v1/tasks/${s.executionId}.a.1/complete`,
      token: TOKENS.taskWorkerB,
      body: { workerId: 'p', fencingToken: 1, outcome: 'succeeded' },
    }),
    detail: /^task not found$/,
  },
  {
    name: 'a failed completion without its error',
    status: 400,
    code: 'validation_failed',
    request: (s) => ({
      method: 'POST',
      path: `/v1/tasks/${s.executionId}.a.1/complete`,
      token: TOKENS.taskWorkerA,
      body: { workerId: 'p', fencingToken: 1, outcome: 'failed' },
    }),
    issue: { path: 'body.error', message: /error is required/ },
  },
  {
    name: 'a completion whose output is over the node output limit',
    status: 413,
    code: 'output_too_large',
    request: (s) => ({
      method: 'POST',
      path: `/v1/tasks/${s.executionId}.a.1/complete`,
      token: TOKENS.taskWorkerA,
      body: { workerId: 'p', fencingToken: 1, outcome: 'succeeded', output: 'x'.repeat(MIB - 3_000) },
    }),
    detail: /the limit is 1044480 bytes/,
  },
];

function expectProblem(res: HttpResult, expected: BadRequestCase): void {
  // The body rides along so a wrong status shows what the server said.
  expect({ status: res.status, body: res.body }).toMatchObject({ status: expected.status });
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.body).toMatchObject({
    type: `urn:flostra:problem:${expected.code}`,
    title: expect.any(String),
    status: expected.status,
    code: expected.code,
    detail: expect.any(String),
  });
  if (expected.detail) expect(res.body.detail).toMatch(expected.detail);
  if (expected.issue) {
    const { path, message } = expected.issue;
    expect(res.body.issues).toEqual(
      expect.arrayContaining([
        { path: typeof path === 'string' ? path : expect.stringMatching(path), message: expect.stringMatching(message) },
      ]),
    );
  }
}

describe.each(STORE_KINDS)('bad input on %s: a clear 4xx and nothing written', (kind) => {
  let testApp: TestApp;
  let api: ApiClient;
  let setup: Setup;
  let headBefore: string | null;
  let historyBefore: unknown;
  let workflowBefore: unknown;

  const history = async () => {
    const res = await api.get(`/v1/executions/${setup.executionId}/history?limit=1000`, { token: TOKENS.viewerA });
    expect(res.status).toBe(200);
    return res.body;
  };
  const workflow = async () => {
    const res = await api.get(workflowPath(WORKFLOW), { token: TOKENS.viewerA });
    expect(res.status).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    testApp = await startTestApp(kind);
    api = client(testApp.url);
    await publish(api, WORKFLOW);
    const started = await start(api, WORKFLOW, { key: IDEMPOTENCY_KEY });
    setup = { executionId: started.executionId, attemptId: started.attemptId };
    headBefore = await testApp.store.headPosition();
    historyBefore = await history();
    workflowBefore = await workflow();
  });

  afterAll(async () => {
    await testApp?.close();
  });

  it.each(CASES)('$name → $status $code', async (badCase) => {
    const { method, path, ...options } = badCase.request(setup);
    const res = await api.request(method, path, options);
    expectProblem(res, badCase);
    expect(await testApp.store.headPosition()).toBe(headBefore);
  });

  it("answers another workspace's execution exactly as one that does not exist", async () => {
    for (const suffix of ['', '/history']) {
      const foreign = await api.get(`/v1/executions/${setup.executionId}${suffix}`, { token: TOKENS.adminB });
      const missing = await api.get(`/v1/executions/${MISSING_EXECUTION}${suffix}`, { token: TOKENS.adminB });
      expect(foreign.status).toBe(404);
      expect(foreign.headers.get('content-type')).toBe('application/problem+json');
      expect(foreign.body).toMatchObject({ code: 'not_found', status: 404 });
      expect(foreign.body).toEqual(missing.body);
    }
  });

  it("wrote nothing: the log head, the execution's history and the workflow are as before", async () => {
    expect(await testApp.store.headPosition()).toBe(headBefore);
    expect(await history()).toEqual(historyBefore);
    expect(await workflow()).toEqual(workflowBefore);
    const rejected = await api.get(workflowPath('rejected'), { token: TOKENS.viewerA });
    expect(rejected.status).toBe(404);
  });
});
