import { NodeError } from '../dag/node-error.js';
import { EgressError } from '../egress/egress-errors.js';
import type { EgressGuard, EgressResponse } from '../egress/egress-guard.js';
import type { NodeContext } from '../dag/dag.types.js';
import type { NodeExecutor } from './node-executor.js';
import { nodeSecretNames } from '../../workflows/domain/secret-references.js';
import { substituteHttpSecrets, type HttpCallWithSecrets } from '../secrets/http-secrets.js';

/** Response headers kept in the node's output; others (e.g. set-cookie) may carry secrets. */
export const KEPT_RESPONSE_HEADERS = ['content-type', 'content-length', 'etag', 'last-modified', 'location', 'retry-after'];

// Framing and routing belong to the client, and the idempotency key to the runner.
const CONTROLLED_REQUEST_HEADERS = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'upgrade',
  'expect',
  'idempotency-key',
]);

export interface HttpNodeOutput {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Parsed JSON for a JSON content type, otherwise text; null when empty. */
  readonly body: unknown;
}

/**
 * Calls `config.url` through the egress guard, with the node's stable key as `Idempotency-Key`
 * (the same in every try and attempt, so the server can recognise a repeat). Errors:
 * `http_<status>` for a non-2xx answer (retryable for 5xx and 429), `http_timeout` past
 * `timeoutMs` (retryable), `http_network_error` (retryable), the guard's own codes
 * (`egress_denied`, ...). Once the run's signal aborts, the abort itself is rethrown.
 */
export function createHttpNode(egress: EgressGuard): NodeExecutor<'http'> {
  return async (node, ctx) => {
    const { method, timeoutMs } = node.config;
    // Secret references get their values here, at call time only (docs/architecture.md, "Secrets").
    const { url, headers, body, secretHeaders, secretBody } = await callOf(node, ctx.secrets);
    const timeout = AbortSignal.timeout(timeoutMs);
    const host = hostOf(url);
    let response: EgressResponse;
    try {
      response = await egress.request({
        method,
        url,
        headers: requestHeaders(headers, ctx.idempotencyKey, body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.any([ctx.signal, timeout]),
        originBoundHeaders: secretHeaders,
        originBoundBody: secretBody,
      });
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      if (timeout.aborted) throw new NodeError('http_timeout', `${method} ${host}: no response within ${timeoutMs} ms`, true);
      if (error instanceof EgressError) throw new NodeError(error.code, error.message, error.retryable, { cause: error });
      const reason = error instanceof Error ? error.message : String(error);
      throw new NodeError('http_network_error', `${method} ${host} failed: ${reason}`, true, { cause: error });
    }
    const { status } = response;
    if (status < 200 || status > 299) {
      throw new NodeError(`http_${status}`, `${method} ${host} answered ${status}`, status >= 500 || status === 429);
    }
    const output: HttpNodeOutput = { status, headers: keptHeaders(response.headers), body: decodeBody(response) };
    return output;
  };
}

async function callOf(node: Parameters<NodeExecutor<'http'>>[0], secrets: NodeContext['secrets']): Promise<HttpCallWithSecrets> {
  const { url, headers, body } = node.config;
  if (nodeSecretNames(node).length === 0) return { url, headers: headers ?? {}, body, secretHeaders: [], secretBody: false };
  if (secrets === undefined)
    throw new NodeError('secret_unavailable', `node ${node.id} references secrets, but this run cannot resolve them`, false);
  return substituteHttpSecrets(node.config, await secrets.values());
}

function requestHeaders(configured: Record<string, string>, idempotencyKey: string, hasBody: boolean): Record<string, string> {
  const headers = Object.fromEntries(
    Object.entries(configured)
      .map(([name, value]) => [name.toLowerCase(), value] as const)
      .filter(([name]) => !CONTROLLED_REQUEST_HEADERS.has(name)),
  );
  if (hasBody && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
  headers['idempotency-key'] = idempotencyKey;
  return headers;
}

function keptHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(KEPT_RESPONSE_HEADERS.flatMap((name) => (headers[name] === undefined ? [] : [[name, headers[name]]])));
}

function decodeBody(response: EgressResponse): unknown {
  if (response.body.length === 0) return null;
  const text = response.body.toString('utf8');
  if (!/[/+]json\b/i.test(response.headers['content-type'] ?? '')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Only the host appears in messages: paths and queries may carry tokens. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'an invalid URL';
  }
}
