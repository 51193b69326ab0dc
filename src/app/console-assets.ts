import type { NestExpressApplication } from '@nestjs/platform-express';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROBLEM_CONTENT_TYPE, problem } from '../http/problem.js';

/** Where the web console is served, and where `npm run build` puts it (dist/console). */
export const CONSOLE_PATH = '/console';

/**
 * Only this origin, for everything: no inline script or style, no other host, no framing. The
 * console's styles are one stylesheet; React Flow positions nodes through the CSS object model,
 * which `style-src` does not govern.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** The package's root: the nearest folder above this module with a package.json (from src/ and dist/src/ alike). */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('no package.json above the console server module');
    dir = parent;
  }
  return dir;
}

export function consoleDir(): string {
  return join(packageRoot(), 'dist', 'console');
}

/**
 * Serves the web console's built files at /console: hashed assets under /console/assets/ for a
 * year (their names change with their content), and index.html, without caching, for /console
 * and every deep link below it, so the browser's router takes over. Every answer carries a strict
 * Content-Security-Policy. Without a build (dist/console missing) /console answers 503.
 */
export function serveConsole(app: NestExpressApplication, dir = consoleDir()): void {
  const assets = join(dir, 'assets');
  app.use(`${CONSOLE_PATH}/assets`, (_request: IncomingMessage, response: ServerResponse, next: () => void) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
    next();
  });
  app.useStaticAssets(assets, {
    prefix: `${CONSOLE_PATH}/assets`,
    index: false,
    redirect: false,
    fallthrough: true,
    immutable: true,
    maxAge: '365d',
  });
  app.use(CONSOLE_PATH, (request: IncomingMessage & { originalUrl?: string }, response: ServerResponse, next: () => void) => {
    const path = (request.originalUrl ?? request.url ?? '').split('?')[0];
    const method = request.method ?? 'GET';
    // An asset that does not exist is a plain 404, not the page: a stale page asking for an old bundle must see it fail.
    if ((method !== 'GET' && method !== 'HEAD') || path.startsWith(`${CONSOLE_PATH}/assets/`)) return next();
    if (path !== CONSOLE_PATH && !path.startsWith(`${CONSOLE_PATH}/`)) return next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
    response.setHeader('Cache-Control', 'no-cache');
    const index = join(dir, 'index.html');
    if (!existsSync(index)) {
      response.statusCode = 503;
      response.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
      response.end(JSON.stringify(problem('unavailable', 'the web console is not built: run npm run build')));
      return;
    }
    response.statusCode = 200;
    response.setHeader('Content-Type', 'text/html; charset=utf-8');
    response.end(method === 'HEAD' ? undefined : readFileSync(index));
  });
}
