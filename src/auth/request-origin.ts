import type { IncomingMessage } from 'node:http';

const first = (header: string | string[] | undefined): string | undefined =>
  (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim().toLowerCase() || undefined;

/** Whether the browser reached us over https, directly or through a proxy that says so. */
export function isSecureRequest(request: IncomingMessage): boolean {
  return first(request.headers['x-forwarded-proto']) === 'https' || (request.socket as { encrypted?: boolean }).encrypted === true;
}

/**
 * Whether the request's `Origin` names another site than this server: false when it carries none
 * (not every client sends one). This server is the host the request was sent to (`Host`, or the
 * `X-Forwarded-Host` of a proxy; another site's page can set neither) with its scheme. An opaque
 * origin (`null`) is another site.
 */
export function isForeignOrigin(request: IncomingMessage): boolean {
  const origin = first(request.headers.origin);
  if (origin === undefined) return false;
  const scheme = isSecureRequest(request) ? 'https' : 'http';
  const hosts = [first(request.headers['x-forwarded-host']), first(request.headers.host)];
  return !hosts.some((host) => host !== undefined && origin === `${scheme}://${host}`);
}

/** The address a request came from, for rate limits: the peer of the connection. */
export function clientAddress(request: IncomingMessage): string {
  return request.socket.remoteAddress ?? 'unknown';
}
