import { createServer, type Server } from 'node:http';

/**
 * A loopback sink for `http` nodes (a map's items, most often): counts the requests of each
 * Idempotency-Key, answers the first `answeredFirst` requests at once (200, `{ key }`) and holds
 * every later one until `release`, so that a test can stop processes while requests are open.
 */
export class HoldingSink {
  readonly hits = new Map<string, number>();
  private readonly held: (() => void)[] = [];
  private released = false;
  private server: Server | null = null;
  url = '';

  constructor(private readonly answeredFirst: number) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const key = String(req.headers['idempotency-key']);
      this.hits.set(key, (this.hits.get(key) ?? 0) + 1);
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ key }));
      };
      if (this.released || this.total() <= this.answeredFirst) answer();
      else this.held.push(answer);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/item`;
  }

  get heldCount(): number {
    return this.held.length;
  }

  total(): number {
    return [...this.hits.values()].reduce((sum, n) => sum + n, 0);
  }

  release(): void {
    this.released = true;
    for (const answer of this.held.splice(0)) answer();
  }

  async stop(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
