import { createServer, type Server } from 'node:http';

/**
 * A loopback HTTP server that `http` nodes call: `/hold/<name>` waits until the test releases
 * that name (a barrier the test controls), `/echo/<name>` answers at once; every request is
 * counted per name, so a test can tell how many times a node really ran.
 */
export class BarrierServer {
  private server: Server | null = null;
  private readonly waiting = new Map<string, Array<() => void>>();
  private readonly released = new Set<string>();
  readonly hits = new Map<string, number>();
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const [, verb, name = ''] = (req.url ?? '/').split('/');
      this.hits.set(name, (this.hits.get(name) ?? 0) + 1);
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ name, idempotencyKey: req.headers['idempotency-key'] ?? null }));
      };
      if (verb === 'hold' && !this.released.has(name)) {
        const list = this.waiting.get(name) ?? [];
        list.push(answer);
        this.waiting.set(name, list);
        return;
      }
      answer();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${address.port}`;
  }

  /** How many requests for `name` are being held right now. */
  heldCount(name: string): number {
    return this.waiting.get(name)?.length ?? 0;
  }

  release(name: string): void {
    this.released.add(name);
    for (const answer of this.waiting.get(name) ?? []) answer();
    this.waiting.delete(name);
  }

  async stop(): Promise<void> {
    for (const name of [...this.waiting.keys()]) this.release(name);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
