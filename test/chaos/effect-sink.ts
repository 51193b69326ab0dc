import { createServer, type Server } from 'node:http';

/**
 * A loopback HTTP server that stands for the outside world `http` nodes act on: it answers 200 at
 * once and counts every request by its `Idempotency-Key` header, so a test can tell which effects
 * arrived, and which arrived more than once.
 */
export class EffectSink {
  private server: Server | null = null;
  /** Requests per idempotency key (`<executionId>:<nodeId>`). */
  readonly deliveries = new Map<string, number>();
  /** Requests without a key: none is expected. */
  unkeyed = 0;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const key = req.headers['idempotency-key'];
      if (typeof key === 'string') this.deliveries.set(key, (this.deliveries.get(key) ?? 0) + 1);
      else this.unkeyed++;
      req.resume();
      req.once('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: true }));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${address.port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
