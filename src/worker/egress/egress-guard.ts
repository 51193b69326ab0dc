import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { EgressDeniedError, EgressError } from './egress-errors.js';
import { EgressPolicy, type EgressAllowlist } from './egress-policy.js';
import { isRedirect, sendPinned, type CheckedTarget, type HopLimits, type ResolvedAddress } from './pinned-request.js';

/** Every address a host name resolves to (like `dns.lookup` with `all: true`). */
export type ResolveHost = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

export const systemResolve: ResolveHost = (hostname) => lookup(hostname, { all: true, verbatim: true });

export interface EgressGuardOptions {
  readonly allow?: EgressAllowlist;
  readonly resolve?: ResolveHost;
  /** Redirects followed (each hop checked again) before giving up; 5 by default. */
  readonly maxRedirects?: number;
  readonly maxResponseBytes?: number;
  readonly connectTimeoutMs?: number;
}

export interface EgressRequest {
  readonly method: string;
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Covers every hop and the body; abort it for cancellation and for timeouts. */
  readonly signal: AbortSignal;
  /** More headers meant for the first origin only (e.g. those that carry a secret): dropped across origins, like Authorization. */
  readonly originBoundHeaders?: readonly string[];
  /** The body is meant for the first origin only (it carries a secret): a redirect that would resend it elsewhere is refused. */
  readonly originBoundBody?: boolean;
}

export interface EgressResponse {
  readonly status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** Where the final response came from, after redirects. */
  readonly url: string;
  readonly redirects: number;
}

/** The only way a node reaches the network. */
export interface EgressGuard {
  /** Resolves the URL's host once and checks every address; throws EgressDeniedError when refused. */
  check(url: string | URL): Promise<CheckedTarget>;
  /** A request whose every hop is checked and pinned to its checked addresses. */
  request(request: EgressRequest): Promise<EgressResponse>;
}

export const DEFAULT_MAX_REDIRECTS = 5;
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
// Credentials meant for one origin must not follow a redirect to another.
const ORIGIN_BOUND_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

export function createEgressGuard(options: EgressGuardOptions = {}): EgressGuard {
  const policy = new EgressPolicy(options.allow);
  const resolve = options.resolve ?? systemResolve;
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const limits: HopLimits = {
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
  };

  const check = async (input: string | URL): Promise<CheckedTarget> => {
    const url = parseUrl(input);
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const addresses = await resolveOnce(resolve, hostname);
    const verdict = policy.check(
      hostname,
      addresses.map((a) => a.address),
    );
    if (!verdict.allowed) {
      throw new EgressDeniedError(
        `egress to ${url.host} refused: it resolves to ${verdict.address} (${verdict.addressClass})`,
        verdict.address,
        verdict.addressClass,
      );
    }
    return { url, hostname, addresses };
  };

  const request = async (req: EgressRequest): Promise<EgressResponse> => {
    let url: string | URL = req.url;
    let method = req.method.toUpperCase();
    let body = req.body;
    let headers: Record<string, string> = lowerCaseKeys(req.headers ?? {});
    for (let redirects = 0; ; redirects++) {
      const target = await check(url);
      const hop = await sendPinned(target, { method, headers, body, signal: req.signal }, limits);
      const location = hop.headers['location'];
      if (!isRedirect(hop.status) || location === undefined) {
        return { status: hop.status, headers: hop.headers, body: hop.body, url: target.url.href, redirects };
      }
      if (redirects >= maxRedirects) {
        throw new EgressError('egress_too_many_redirects', `more than ${maxRedirects} redirects from ${new URL(req.url).host}`, false);
      }
      const next = parseUrl(location, target.url);
      if (hop.status === 303 || ((hop.status === 301 || hop.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        headers = without(headers, ['content-type', 'content-length']);
      }
      if (next.origin !== target.url.origin) {
        if (body !== undefined && req.originBoundBody === true) {
          throw new EgressDeniedError(
            `egress refused: a redirect from ${target.url.host} to ${next.host} would send a body that carries secrets to another origin`,
          );
        }
        headers = without(headers, [...ORIGIN_BOUND_HEADERS, ...(req.originBoundHeaders ?? []).map((name) => name.toLowerCase())]);
      }
      url = next;
    }
  };

  return { check, request };
}

function parseUrl(input: string | URL, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(input, base);
  } catch {
    throw new EgressDeniedError('egress refused: not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EgressDeniedError(`egress refused: only http and https are allowed, not ${url.protocol}`);
  }
  return url;
}

/** Resolved once per hop; the connection then uses exactly these addresses. */
async function resolveOnce(resolve: ResolveHost, hostname: string): Promise<ResolvedAddress[]> {
  const literal = isIP(hostname);
  if (literal !== 0) return [{ address: hostname, family: literal as 4 | 6 }];
  let answers: readonly { address: string; family: number }[];
  try {
    answers = await resolve(hostname);
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    throw new EgressError('egress_dns_failed', `cannot resolve ${hostname}`, code !== 'ENOTFOUND', { cause });
  }
  // The family comes from the address itself; an answer that is no address is refused by the policy.
  const addresses = answers.map((a): ResolvedAddress => ({ address: a.address, family: isIP(a.address) === 6 ? 6 : 4 }));
  if (addresses.length === 0) throw new EgressError('egress_dns_failed', `${hostname} has no address`, false);
  return addresses;
}

function lowerCaseKeys(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

function without(headers: Record<string, string>, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !names.includes(name)));
}
