import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { json, redirect, startLoopbackServer, type LoopbackServer } from '../../../test/support/worker/egress/loopback-server.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';
import { createEgressGuard } from '../egress/egress-guard.js';
import { createHttpNode } from '../nodes/http-node.js';
import { AttemptSecrets } from './attempt-secrets.js';
import { redactingExecutor } from './redacting-executor.js';
import { SecretRedactor } from './secret-redactor.js';

const TOKEN = 'tok-7d1e9c3a55b0f2e4';
const API_KEY = 'key-0a9b8c7d6e5f4a3b';

type HttpSpec = Partial<NodeOfType<'http'>['config']> & { url: string };
const httpNode = (config: HttpSpec) => graphOf([{ id: 'H', type: 'http', config: { method: 'GET', ...config } }]).nodes[0];

/**
 * The http node with secret references, against loopback servers: values reach the server and
 * nothing else; a redirect to another origin (another port of the same address) loses every
 * header that carried a secret, and never gets a body that carried one.
 */
describe('an http node that references secrets', () => {
  let first: LoopbackServer;
  let other: LoopbackServer;
  const http = createHttpNode(createEgressGuard({ allow: { cidrs: ['127.0.0.1/32'] } }));

  /** Runs the node as a worker does: secrets resolved on first use, output and errors redacted. */
  function run(config: HttpSpec) {
    const redactor = new SecretRedactor();
    const secrets = new AttemptSecrets(
      ['API_KEY', 'TOKEN'],
      async () =>
        new Map([
          ['API_KEY', API_KEY],
          ['TOKEN', TOKEN],
        ]),
      redactor,
    );
    return redactingExecutor((node, ctx) => http(node as NodeOfType<'http'>, ctx), secrets, redactor)(httpNode(config), contextFor('H'));
  }

  const echo = (status: number) => (request: { headers: object; body: string; path: string }, response: ServerResponse) =>
    void response
      .writeHead(status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ headers: request.headers, body: request.body, path: request.path }));

  beforeAll(async () => {
    first = await startLoopbackServer('127.0.0.1');
    other = await startLoopbackServer('127.0.0.1');
    first.route('/echo', echo(200));
    first.route('/fail', echo(500));
    other.route('/landed', echo(200));
    first.route('/same-origin', redirect(307, '/echo'));
    first.route('/elsewhere', (_request, response) => void response.writeHead(302, { location: `${other.origin}/landed` }).end());
    first.route('/elsewhere-307', (_request, response) => void response.writeHead(307, { location: `${other.origin}/landed` }).end());
    other.route('/hello', json(200, {}));
  });
  afterAll(async () => {
    await first.close();
    await other.close();
  });

  const config = (path: string, extra: Partial<HttpSpec> = {}): HttpSpec => ({
    method: 'POST',
    url: `${first.origin}${path}?key={{secret:API_KEY}}`,
    headers: { Authorization: 'Bearer {{secret:TOKEN}}', 'X-Api-Key': '{{secret:API_KEY}}', 'X-Trace': 'trace-1' },
    body: { token: '{{secret:TOKEN}}' },
    ...extra,
  });

  it('sends the values to the server and outputs only redacted echoes of them', async () => {
    const output = await run(config('/echo'));
    const received = first.requests.at(-1)!;
    expect(received.path).toBe(`/echo?key=${API_KEY}`);
    expect(received.headers['authorization']).toBe(`Bearer ${TOKEN}`);
    expect(received.headers['x-api-key']).toBe(API_KEY);
    expect(JSON.parse(received.body)).toEqual({ token: TOKEN });
    const text = JSON.stringify(output);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(API_KEY);
    expect(output).toMatchObject({
      status: 200,
      body: { headers: { authorization: 'Bearer [redacted:TOKEN]', 'x-api-key': '[redacted:API_KEY]' } },
    });
  });

  it('keeps its secret headers and body on a redirect within the origin', async () => {
    await run(config('/same-origin'));
    const landed = first.requests.at(-1)!;
    expect(landed.path).toBe('/echo');
    expect(landed.headers['authorization']).toBe(`Bearer ${TOKEN}`);
    expect(landed.headers['x-api-key']).toBe(API_KEY);
  });

  it('drops every header that carried a secret on a redirect to another origin, and keeps the others', async () => {
    const before = other.requests.length;
    const output = await run(config('/elsewhere', { method: 'GET', body: undefined }));
    expect(other.requests.length).toBe(before + 1);
    const landed = other.requests.at(-1)!;
    expect(landed.headers['authorization']).toBeUndefined();
    expect(landed.headers['x-api-key']).toBeUndefined();
    expect(landed.headers['x-trace']).toBe('trace-1');
    expect(JSON.stringify(landed)).not.toContain(TOKEN);
    expect(JSON.stringify(landed)).not.toContain(API_KEY);
    expect(output).toMatchObject({ status: 200 });
  });

  it('refuses a redirect that would resend a body carrying a secret to another origin', async () => {
    const before = other.requests.length;
    const error = await run(config('/elsewhere-307')).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'egress_denied', retryable: false });
    expect(other.requests.length).toBe(before);
  });

  it('fails on an upstream 500 that echoes the Authorization header, without the value in the error', async () => {
    const error = await run(config('/fail')).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'http_500', retryable: true });
    expect(JSON.stringify({ message: (error as Error).message, error })).not.toContain(TOKEN);
  });

  it('fails without calling anyone when the run cannot resolve secrets', async () => {
    const before = first.requests.length;
    const error = await http(httpNode(config('/echo')) as NodeOfType<'http'>, contextFor('H')).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'secret_unavailable', retryable: false });
    expect(first.requests.length).toBe(before);
  });
});
