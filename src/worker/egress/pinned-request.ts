import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { EgressError } from './egress-errors.js';

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** A URL whose host was resolved once and checked: the only addresses it may connect to. */
export interface CheckedTarget {
  readonly url: URL;
  /** The URL's host name, without IPv6 brackets. */
  readonly hostname: string;
  readonly addresses: readonly ResolvedAddress[];
}

export interface HopRequest {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly signal: AbortSignal;
}

export interface HopResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Empty for a redirect (its body is discarded). */
  readonly body: Buffer;
}

export interface HopLimits {
  readonly maxResponseBytes: number;
  readonly connectTimeoutMs: number;
}

/**
 * One request to a checked target, connecting ONLY to the addresses that were checked: the
 * socket's DNS lookup is replaced by the pre-resolved answer, so a second resolution (DNS
 * rebinding) cannot send it elsewhere. The URL keeps its host name, so Host and TLS SNI and
 * certificate checks still use the original name.
 */
export async function sendPinned(target: CheckedTarget, hop: HopRequest, limits: HopLimits): Promise<HopResponse> {
  const agent = new Agent({ connect: { lookup: pinnedLookup(target), timeout: limits.connectTimeoutMs } });
  let done = false;
  try {
    const response = await request(target.url, {
      dispatcher: agent,
      method: hop.method as 'GET',
      headers: hop.headers,
      body: hop.body,
      signal: hop.signal,
    });
    const headers = flattenHeaders(response.headers);
    if (isRedirect(response.statusCode)) {
      await response.body.dump();
      done = true;
      return { status: response.statusCode, headers, body: Buffer.alloc(0) };
    }
    const body = await readLimited(response.body, headers['content-length'], limits.maxResponseBytes);
    done = true;
    return { status: response.statusCode, headers, body };
  } finally {
    // close() waits for in-flight requests; after a failure one may never finish, so destroy.
    if (done) await agent.close();
    else await agent.destroy();
  }
}

export function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

function pinnedLookup(target: CheckedTarget): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    const candidates = target.addresses.filter((a) => family === 0 || a.family === family);
    if (hostname.toLowerCase() !== target.hostname || candidates.length === 0) {
      const error: NodeJS.ErrnoException = new Error(`egress: no checked address for ${hostname}`);
      error.code = 'ENOTFOUND';
      callback(error, '');
      return;
    }
    if (options.all)
      callback(
        null,
        candidates.map((a): LookupAddress => ({ address: a.address, family: a.family })),
      );
    else callback(null, candidates[0].address, candidates[0].family);
  };
}

function flattenHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: [string, string][] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) headers.push([name.toLowerCase(), Array.isArray(value) ? value.join(', ') : value]);
  }
  return Object.fromEntries(headers);
}

async function readLimited(body: AsyncIterable<Buffer>, declaredLength: string | undefined, maxBytes: number): Promise<Buffer> {
  const tooLarge = () => new EgressError('egress_response_too_large', `the response is larger than ${maxBytes} bytes`, false);
  if (declaredLength !== undefined && Number(declaredLength) > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
