import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export type Route = (request: ReceivedRequest, response: ServerResponse) => void;

export interface LoopbackServer {
  readonly port: number;
  /** `http://127.0.0.1:<port>` or `http://[::1]:<port>`. */
  readonly origin: string;
  readonly requests: ReceivedRequest[];
  route(path: string, handler: Route): void;
  close(): Promise<void>;
}

/** An HTTP server on a loopback address only (tests never send traffic anywhere else). */
export async function startLoopbackServer(host: '127.0.0.1' | '::1'): Promise<LoopbackServer> {
  const routes = new Map<string, Route>();
  const requests: ReceivedRequest[] = [];
  const server = createServer((incoming: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const received = {
        method: incoming.method ?? '',
        path: incoming.url ?? '',
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(received);
      const handler = routes.get(received.path.split('?')[0]);
      if (handler) handler(received, response);
      else response.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: host === '::1' ? `http://[::1]:${port}` : `http://127.0.0.1:${port}`,
    requests,
    route: (path, handler) => void routes.set(path, handler),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

export const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Route =>
  (_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };

export const redirect =
  (status: number, location: string): Route =>
  (_request, response) => {
    response.writeHead(status, { location }).end();
  };
