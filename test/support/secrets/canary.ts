import { expect } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import type { SqlQueryable } from '../../../src/postgres/sql-client.port.js';
import { encodeUrlComponent } from '../../../src/worker/secrets/http-secrets.js';
import { eventually } from '../eventually.js';
import type { ApiClient } from '../http-client.js';
import { startLoopbackServer, type LoopbackServer, type ReceivedRequest } from '../worker/egress/loopback-server.js';

/**
 * The canary test's tools (test/secrets/secrets-canary.e2e.spec.ts): a secret whose value is a
 * unique canary, workflows that use it against an upstream that echoes it back in every form,
 * and a search of every byte that left the process for the canary.
 */

/**
 * 32 random hex characters around characters that URL and HTML encodings write differently
 * (`/`, `&`, `<`, `>`, `'`, `!`): found nowhere unless something leaked it.
 */
export function newCanary(): string {
  return `${randomBytes(8).toString('hex')}/&<>'!${randomBytes(8).toString('hex')}`;
}

/** The canary HTML-escaped, its apostrophe as decimal or hex entity. */
const htmlEscaped = (text: string): string[] =>
  ['&#39;', '&#x27;'].map((apostrophe) =>
    text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll("'", apostrophe),
  );

/**
 * What the search looks for: the canary as written, in base64 (whole, unpadded, base64url, and
 * the parts of it that stand inside a longer base64 text at any offset), URL-encoded (as a
 * component, also as the worker puts it in a url, by `encodeURI`, and form-encoded), HTML-escaped, and in hex (how a bytea column
 * prints, and upper-case).
 */
export function canaryForms(canary: string): string[] {
  const bytes = Buffer.from(canary, 'utf8');
  const forms = new Set([
    canary,
    bytes.toString('base64'),
    bytes.toString('base64url'),
    encodeURIComponent(canary),
    encodeUrlComponent(canary),
    encodeURI(canary),
    new URLSearchParams({ v: canary }).toString().slice(2),
    ...htmlEscaped(canary),
    bytes.toString('hex'),
    bytes.toString('hex').toUpperCase(),
  ]);
  for (let skip = 0; skip < 3; skip++) {
    const whole = Math.floor((bytes.length - skip) / 3) * 3;
    const fragment = bytes.subarray(skip, skip + whole);
    forms.add(fragment.toString('base64'));
    forms.add(fragment.toString('base64url'));
  }
  return [...forms];
}

/** Everything that left the process, by where it was seen. */
export class Evidence {
  private readonly items: { where: string; data: string | Buffer }[] = [];

  add(where: string, data: string | Buffer): void {
    this.items.push({ where, data });
  }

  /** How many items were recorded whose `where` starts with `prefix` (the search must not be vacuous). */
  count(prefix: string): number {
    return this.items.filter((item) => item.where.startsWith(prefix)).length;
  }

  /** Every place any form of the canary occurs, with a little context. */
  findings(canary: string): string[] {
    const found: string[] = [];
    for (const form of canaryForms(canary)) {
      const needle = Buffer.from(form, 'utf8');
      for (const { where, data } of this.items) {
        const haystack = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
        const at = haystack.indexOf(needle);
        if (at === -1) continue;
        const context = haystack.subarray(Math.max(0, at - 60), at + needle.length + 60).toString('utf8');
        found.push(`${where}: "${form}" at byte ${at}: …${context}…`);
      }
    }
    return found;
  }
}

/**
 * An upstream on 127.0.0.1 that echoes what it receives, in several encodings (base64 at each
 * byte offset, URL-encoded two ways, HTML-escaped, hex): `/ok` answers 200,
 * `/fail` 500, `/hold` answers only when released (a call to cancel).
 */
export class EchoServer {
  private server!: LoopbackServer;
  private held: ServerResponse[] = [];

  get origin(): string {
    return this.server.origin;
  }

  get requests(): readonly ReceivedRequest[] {
    return this.server.requests;
  }

  get heldCount(): number {
    return this.held.length;
  }

  async start(): Promise<void> {
    this.server = await startLoopbackServer('127.0.0.1');
    const echo = (status: number) => (request: ReceivedRequest, response: ServerResponse) => {
      const authorization = String(request.headers['authorization'] ?? '');
      response.writeHead(status, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          path: request.path,
          headers: request.headers,
          body: request.body,
          bodyBase64: Buffer.from(request.body).toString('base64'),
          authorizationUrlEncoded: encodeURIComponent(authorization),
          authorizationUriEncoded: encodeURI(authorization),
          authorizationHtml: htmlEscaped(authorization)[0],
          authorizationHex: Buffer.from(authorization).toString('hex'),
          // "Bearer " is 7 bytes: behind 0, 1 and 2 more, the canary starts at each offset of a 3-byte group.
          authorizationBase64: ['', 'x', 'xx'].map((before) => Buffer.from(before + authorization).toString('base64')),
        }),
      );
    };
    this.server.route('/ok', echo(200));
    this.server.route('/fail', echo(500));
    this.server.route('/hold', (_request, response) => void this.held.push(response));
  }

  release(): void {
    for (const response of this.held.splice(0)) response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }

  async stop(): Promise<void> {
    this.release();
    await this.server.close();
  }
}

/** Reads a Server-Sent Events stream into the evidence until `stop`. */
export function collectSse(
  url: string,
  token: string,
  evidence: Evidence,
  where: string,
): { text: () => string; stop: () => Promise<void> } {
  const controller = new AbortController();
  let text = '';
  const done = (async () => {
    try {
      const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
      const decoder = new TextDecoder();
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    } finally {
      evidence.add(where, text);
    }
  })();
  return {
    text: () => text,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

/** Every message of `topics` that exist, from the beginning to the end they have now: key, value and headers. */
export async function readTopics(brokers: string[], topics: string[], evidence: Evidence): Promise<Map<string, number>> {
  const kafka = new kafkajs.Kafka({ clientId: 'canary-reader', brokers, logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const counts = new Map<string, number>();
  const pending = new Set<string>();
  const ends = new Map<string, bigint>();
  try {
    const existing = new Set(await admin.listTopics());
    const present = topics.filter((topic) => existing.has(topic));
    for (const topic of present) {
      counts.set(topic, 0);
      for (const { partition, high, low } of await admin.fetchTopicOffsets(topic)) {
        if (BigInt(high) > BigInt(low)) {
          pending.add(`${topic}/${partition}`);
          ends.set(`${topic}/${partition}`, BigInt(high));
        }
      }
    }
    if (pending.size === 0) return counts;
    const consumer = kafka.consumer({ groupId: `canary-reader-${randomBytes(6).toString('hex')}` });
    await consumer.connect();
    try {
      await consumer.subscribe({ topics: present, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ topic, partition, message }) => {
          const where = `kafka ${topic}/${partition}@${message.offset}`;
          counts.set(topic, (counts.get(topic) ?? 0) + 1);
          if (message.key !== null) evidence.add(`${where} key`, message.key);
          if (message.value !== null) evidence.add(where, message.value);
          for (const [name, value] of Object.entries(message.headers ?? {})) evidence.add(`${where} header ${name}`, String(value));
          const end = ends.get(`${topic}/${partition}`);
          if (end !== undefined && BigInt(message.offset) + 1n >= end) pending.delete(`${topic}/${partition}`);
        },
      });
      await eventually(() => pending.size === 0, {
        what: () => `every message of ${[...pending].join(', ')} to be read`,
        timeoutMs: 60_000,
      });
    } finally {
      await consumer.disconnect();
    }
    return counts;
  } finally {
    await admin.disconnect();
  }
}

/** Every row of every table in every schema of a database, as text (bytea prints as hex). */
export async function dumpTables(sql: SqlQueryable, evidence: Evidence, prefix: string): Promise<string[]> {
  const { rows: tables } = await sql.query<{ table_schema: string; table_name: string }>(
    `select table_schema, table_name from information_schema.tables
     where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
     order by 1, 2`,
  );
  const names: string[] = [];
  for (const { table_schema: schema, table_name: table } of tables) {
    const name = `${quoteIdent(schema)}.${quoteIdent(table)}`;
    const { rows } = await sql.query<{ row: string }>(`select t::text as row from ${name} t`);
    evidence.add(`${prefix} ${schema}.${table}`, rows.map((r) => r.row).join('\n'));
    names.push(`${schema}.${table}`);
  }
  return names;
}

/** Every file under `dir`, byte for byte. */
export async function readFilesUnder(dir: string, evidence: Evidence, prefix: string): Promise<number> {
  let files = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    evidence.add(`${prefix} ${path}`, await readFile(path));
    files += 1;
  }
  return files;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export interface CanaryActors {
  workspace: string;
  admin: string;
  operator: string;
  viewer: string;
}

const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled'];

/**
 * Plants the canary as secret `CANARY` and runs workflows that use it in an http node's url,
 * headers and body: one that succeeds (and a transform after it that copies and base64-encodes
 * the echo), one whose upstream answers 500 echoing the Authorization header, one that retries
 * (node and attempt), one cancelled while its call is in flight, and a start refused for a
 * missing secret. Answers the ids of the executions it ran, and the output of the one that
 * succeeded (the caller checks it was redacted, once it has searched for the canary).
 */
export async function runCanaryWorkflows(
  api: ApiClient,
  actors: CanaryActors,
  echo: EchoServer,
  canary: string,
): Promise<{ ids: string[]; happyOutput: unknown }> {
  const { workspace, admin, operator, viewer } = actors;
  const planted = await api.put(`/v1/workspaces/${workspace}/secrets/CANARY`, { token: admin, body: { value: canary } });
  expect(planted.status).toBe(201);

  const call = (path: string, extra: object = {}) => ({
    id: 'call',
    type: 'http',
    config: {
      method: 'POST',
      url: `${echo.origin}${path}?key={{secret:CANARY}}`,
      headers: { Authorization: 'Bearer {{secret:CANARY}}', 'X-Api-Key': '{{secret:CANARY}}', 'X-Plain': 'plain' },
      body: { token: '{{secret:CANARY}}', nested: { list: ['before {{secret:CANARY}} after'] } },
      timeoutMs: 60_000,
    },
    ...extra,
  });
  const instant = { initialIntervalMs: 0, maxIntervalMs: 0 };
  const graphs: Record<string, object> = {
    'canary-happy': {
      nodes: [
        call('/ok'),
        {
          id: 'copy',
          type: 'transform',
          config: { expression: '{ "echo": nodes.call.body, "encoded": $base64encode($string(nodes.call)) }' },
        },
      ],
      edges: [{ from: 'call', to: 'copy' }],
    },
    'canary-failure': { nodes: [call('/fail')] },
    'canary-retry': { nodes: [call('/fail', { retry: { maxAttempts: 2, ...instant } })], retry: { maxAttempts: 2, ...instant } },
    'canary-cancel': { nodes: [call('/hold')] },
    'canary-missing': { nodes: [{ ...call('/ok'), config: { method: 'GET', url: `${echo.origin}/ok?key={{secret:NOT_THERE}}` } }] },
  };
  for (const [name, graph] of Object.entries(graphs)) {
    const published = await api.put(`/v1/workspaces/${workspace}/workflows/${name}`, { token: admin, body: graph });
    expect(published.status).toBe(201);
  }
  const start = async (name: string) => {
    const started = await api.post(`/v1/workspaces/${workspace}/workflows/${name}/executions`, { token: operator, body: {} });
    expect({ name, status: started.status }).toEqual({ name, status: 201 });
    return started.body.executionId as string;
  };
  const finished = (id: string) =>
    eventually(
      async () => {
        const view = await api.get(`/v1/executions/${id}`, { token: viewer });
        return TERMINAL.includes(view.body.status) ? view.body : false;
      },
      { what: `execution ${id} to finish`, timeoutMs: 60_000 },
    );

  const missing = await api.post(`/v1/workspaces/${workspace}/workflows/canary-missing/executions`, { token: operator, body: {} });
  expect(missing.status).toBe(409);
  expect(missing.body.missing).toEqual(['NOT_THERE']);

  const received = echo.requests.length;
  const [happy, failure, retry, cancel] = [
    await start('canary-happy'),
    await start('canary-failure'),
    await start('canary-retry'),
    await start('canary-cancel'),
  ];
  await eventually(() => echo.heldCount === 1, { what: 'the cancelled workflow’s call to be in flight', timeoutMs: 60_000 });
  expect((await api.post(`/v1/executions/${cancel}/cancel`, { token: operator, body: { reason: 'canary' } })).status).toBe(202);

  const happyView = await finished(happy);
  expect(happyView.status).toBe('succeeded');
  const failureView = await finished(failure);
  expect(failureView).toMatchObject({ status: 'failed', error: { code: 'http_500' } });
  const retryView = await finished(retry);
  expect(retryView.status).toBe('failed');
  expect(retryView.attempts.map((a: { status: string }) => a.status)).toEqual(['failed', 'failed']);
  const cancelView = await finished(cancel);
  expect(cancelView.status).toBe('cancelled');
  echo.release();

  // The upstream did get the value: substitution works, and the search below is not vacuous.
  const calls = echo.requests.slice(received);
  expect(calls.length).toBeGreaterThanOrEqual(1 + 1 + 4 + 1);
  for (const request of calls) {
    expect(request.headers['authorization']).toBe(`Bearer ${canary}`);
    expect(request.path).toContain(`key=${encodeUrlComponent(canary)}`);
    expect(request.body).toContain(canary);
  }

  const ids = [happy, failure, retry, cancel];
  for (const id of ids) {
    const history = await api.get(`/v1/executions/${id}/history?limit=1000`, { token: viewer });
    expect(history.status).toBe(200);
  }
  const list = await api.get(`/v1/workspaces/${workspace}/secrets`, { token: admin });
  expect(list.body.items).toContainEqual(expect.objectContaining({ name: 'CANARY', version: 1 }));
  await api.get(`/v1/workspaces/${workspace}/executions?limit=200`, { token: viewer });
  for (const name of Object.keys(graphs)) await api.get(`/v1/workspaces/${workspace}/workflows/${name}`, { token: viewer });
  return { ids, happyOutput: happyView.output };
}
