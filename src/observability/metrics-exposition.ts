import { createServer, type Server } from 'node:http';
import type { Metrics } from '../core/metrics.port.js';
import { METRICS_CONTENT_TYPE } from './metrics.contract.js';

interface Exposition {
  scrape(): Promise<string>;
}

/** The exposition text of `metrics`; empty for metrics that expose nothing (NO_METRICS). */
export function scrapeOf(metrics: Metrics): Promise<string> {
  const exposition = metrics as Partial<Exposition>;
  return typeof exposition.scrape === 'function' ? exposition.scrape() : Promise.resolve('');
}

export interface MetricsServer {
  /** Where it listens: `http://host:port`. */
  url: string;
  close(): Promise<void>;
}

/**
 * `GET /metrics` on a listener of its own (FLOSTRA_METRICS_PORT), on the process's HOST: a
 * scraper reaches it without reaching the API, and a worker-only process, which serves no
 * other HTTP, exposes its metrics there. Everything else answers 404.
 */
export async function serveMetrics(metrics: Metrics, host: string, port: number): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?', 1)[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    scrapeOf(metrics).then(
      (body) => {
        response.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Cache-Control': 'no-store' });
        response.end(request.method === 'HEAD' ? undefined : body);
      },
      () => response.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
