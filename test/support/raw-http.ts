import { connect, type Socket } from 'node:net';
import { eventually } from './eventually.js';

/**
 * One TCP connection to a loopback HTTP server, written to byte by byte as a test wants (a
 * declared length it never sends, a body trickled in, headers that never end), keeping
 * everything the server sends and whether the server closed the connection.
 */
export class RawConnection {
  private text = '';
  private ended = false;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (this.text += chunk));
    socket.on('close', () => (this.ended = true));
    socket.on('error', () => (this.ended = true));
  }

  /** Connects to the host and port of `url` (http://127.0.0.1:<port>). */
  static open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** What the server sent so far. */
  get received(): string {
    return this.text;
  }

  /** The server (or the network) closed the connection. */
  get closed(): boolean {
    return this.ended;
  }

  /** Writes unless the connection is gone; false when it was. */
  write(data: string): boolean {
    if (this.ended || this.socket.destroyed) return false;
    this.socket.write(data, 'latin1');
    return true;
  }

  /** The status of the final response (an interim `100 Continue` is skipped), once its head arrived. */
  async status(timeoutMs = 10_000): Promise<number> {
    const head = await eventually(() => /HTTP\/1\.1 ([2-5]\d\d) [^\r\n]*\r\n/.exec(this.text) ?? false, {
      what: () => `a final response (received so far: ${JSON.stringify(this.text.slice(0, 300))}, closed: ${this.ended})`,
      timeoutMs,
    });
    return Number(head[1]);
  }

  /** The JSON body of the response, once the server closed the connection after it. */
  async problem(timeoutMs = 10_000): Promise<Record<string, unknown>> {
    await this.closedByServer(timeoutMs);
    const body = this.text.slice(this.text.indexOf('\r\n\r\n', this.text.search(/HTTP\/1\.1 [2-5]/)) + 4);
    return JSON.parse(body) as Record<string, unknown>;
  }

  /** Resolves once the server closed the connection. */
  async closedByServer(timeoutMs = 10_000): Promise<void> {
    await eventually(() => this.ended, {
      what: () => `the server to close the connection (received: ${JSON.stringify(this.text.slice(0, 300))})`,
      timeoutMs,
    });
  }

  close(): void {
    this.socket.destroy();
  }
}
