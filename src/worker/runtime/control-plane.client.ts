import http from 'node:http';
import https from 'node:https';
import { z } from 'zod';
import { traceMessageHeaders } from '../../core/traceparent.js';
import { currentTraceHeaders } from '../../observability/tracing.js';
import {
  CheckedGraphs,
  ClaimRefusedError,
  claimReplySchema,
  type ClaimReply,
  type ControlPlane,
  ControlPlaneUnavailableError,
  heartbeatReplySchema,
  type HeartbeatReply,
} from './control-plane.port.js';

/** The claim reply with its graph left unchecked: checked once per workflow digest (see `claim`). */
const claimEnvelopeSchema = claimReplySchema.extend({ workflow: claimReplySchema.shape.workflow.extend({ graph: z.unknown() }) });

/**
 * The ControlPlane over HTTP: a worker in a process of its own reaches the api this way, its
 * replies checked at the edge with zod. Requests go over node:http(s) with kept-alive
 * connections: a claim and a heartbeat per attempt are the worker's hot path, and fetch's
 * streams cost several times more CPU here.
 */
export class ControlPlaneClient implements ControlPlane {
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly checkedGraphs = new CheckedGraphs();

  constructor(
    baseUrl: string,
    private readonly token: string,
    private readonly timeoutMs = 10_000,
  ) {
    this.base = new URL(baseUrl);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') throw new Error(`control plane URL must be http(s): ${baseUrl}`);
    this.agent = this.base.protocol === 'https:' ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  }

  /** Claims an attempt. The reply is checked at the edge, its graph once per workflow digest. */
  async claim(executionId: string, attemptId: string, workerId: string): Promise<ClaimReply> {
    const reply = claimEnvelopeSchema.parse(await this.post(`/v1/executions/${executionId}/attempts/${attemptId}/claim`, { workerId }));
    const graph = this.checkedGraphs.of(reply.workflow.digest, reply.workflow.graph);
    return { ...reply, workflow: { ...reply.workflow, graph } };
  }

  async heartbeat(executionId: string, attemptId: string, workerId: string, fencingToken: number): Promise<HeartbeatReply> {
    return heartbeatReplySchema.parse(
      await this.post(`/v1/executions/${executionId}/attempts/${attemptId}/heartbeat`, { workerId, fencingToken }),
    );
  }

  /**
   * The values of the secrets the claimed graph references (docs/api.md, "Worker protocol"):
   * answered only to the live claim. The values are returned, never logged or kept.
   */
  async resolveSecrets(
    executionId: string,
    attemptId: string,
    body: { workerId: string; fencingToken: number; names: readonly string[] },
  ): Promise<ReadonlyMap<string, string>> {
    return secretValuesOf(await this.post(`/v1/executions/${executionId}/attempts/${attemptId}/secrets`, body));
  }

  /** The fallback path when results cannot be published: report the failure synchronously. */
  async complete(executionId: string, attemptId: string, body: Record<string, unknown>): Promise<void> {
    await this.post(`/v1/executions/${executionId}/attempts/${attemptId}/complete`, body);
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  private async post(path: string, body: unknown): Promise<unknown> {
    let response: { status: number; text: string };
    try {
      response = await this.send(path, JSON.stringify(body));
    } catch (error) {
      throw new ControlPlaneUnavailableError(`control plane unreachable: ${String(error)}`);
    }
    const { status, text } = response;
    const parsed = parseJsonObject(text);
    if (status >= 200 && status < 300) {
      if (parsed === undefined) throw new ControlPlaneUnavailableError(`control plane answered ${status} with a body that is not JSON`);
      return parsed;
    }
    if (status >= 500 || status === 429) {
      throw new ControlPlaneUnavailableError(`control plane answered ${status}: ${String(parsed?.['detail'] ?? text)}`);
    }
    throw new ClaimRefusedError(status, String(parsed?.['code'] ?? 'error'), String(parsed?.['detail'] ?? text));
  }

  /** One POST; rejects on a network failure or when no whole answer came within the timeout. */
  private send(path: string, body: string): Promise<{ status: number; text: string }> {
    const transport = this.base.protocol === 'https:' ? https : http;
    const url = new URL(this.base.pathname.replace(/\/$/, '') + path, this.base);
    return new Promise((resolve, reject) => {
      const request = transport.request(url, {
        method: 'POST',
        agent: this.agent,
        headers: {
          authorization: `Bearer ${this.token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          // The attempt's trace continues on the control plane (claim, heartbeats, secrets).
          ...traceMessageHeaders(currentTraceHeaders()),
        },
      });
      const timer = setTimeout(() => request.destroy(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      request.on('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        // A kept-alive connection the server closed as idle just as this request went out on it:
        // sent again at once on another, as the caller's retry would do after its backoff.
        if (request.reusedSocket && error.code === 'ECONNRESET') this.send(path, body).then(resolve, reject);
        else reject(error);
      });
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
        response.on('end', () => {
          clearTimeout(timer);
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      request.end(body);
    });
  }
}

/**
 * `{ values: { NAME: value } }` as a map, checked by hand: a secret may be named `__proto__`,
 * which an object schema would drop. Messages never show a value.
 */
function secretValuesOf(reply: unknown): Map<string, string> {
  const values = typeof reply === 'object' && reply !== null ? (reply as { values?: unknown }).values : undefined;
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    throw new ControlPlaneUnavailableError('the secrets reply has no values');
  const entries = Object.entries(values);
  if (entries.some(([, value]) => typeof value !== 'string'))
    throw new ControlPlaneUnavailableError('the secrets reply holds a value that is not text');
  return new Map(entries as [string, string][]);
}

/** The JSON object of an answer; null for an empty body, undefined for anything unreadable (a proxy's HTML page). */
function parseJsonObject(text: string): Record<string, unknown> | null | undefined {
  if (text === '') return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
