import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';

/** One dispatched SSE message. */
export interface SseMessage {
  id: string;
  event: string;
  data: string;
}

export interface SseOpenOptions {
  token?: string;
  lastEventId?: string;
  /** The stream does not read from its socket until `resume()`: a client that never reads. */
  paused?: boolean;
}

/**
 * A raw SSE client over node:http (loopback only): keeps every message, comment and `retry:`
 * exactly as parsed, never reconnects by itself, and can stop reading its socket entirely.
 */
export class SseStream {
  readonly messages: SseMessage[] = [];
  readonly comments: string[] = [];
  retry: number | null = null;
  status = 0;
  headers: IncomingHttpHeaders = {};
  /** Body of a non-200 answer. */
  body = '';
  /** Resolves when the server ends or drops the stream (or `close()` is called). */
  readonly ended: Promise<void>;
  private response: IncomingMessage | null = null;
  private pending = '';
  private lastId = '';
  private markEnded!: () => void;
  private listeners = new Set<() => void>();

  private constructor(private readonly abort: AbortController) {
    this.ended = new Promise((resolve) => (this.markEnded = resolve));
  }

  /** Connects and resolves once the status line and headers arrived. */
  static open(url: string, options: SseOpenOptions = {}): Promise<SseStream> {
    const stream = new SseStream(new AbortController());
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    return new Promise((resolve, reject) => {
      const req = request(url, { headers, agent: false, signal: stream.abort.signal }, (res) => {
        stream.response = res;
        stream.status = res.statusCode ?? 0;
        stream.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => stream.consume(chunk));
        res.on('end', () => stream.finish());
        res.on('error', () => stream.finish());
        res.on('close', () => stream.finish());
        if (options.paused) res.pause();
        resolve(stream);
      });
      req.on('error', (error) => {
        stream.finish();
        reject(error);
      });
      req.end();
    });
  }

  get ids(): string[] {
    return this.messages.map((m) => m.id);
  }

  /** The last complete message's id: what a client resumes from. */
  get lastEventId(): string {
    return this.lastId;
  }

  /** Parsed `data:` of every message. */
  data<T = any>(): T[] {
    return this.messages.map((m) => JSON.parse(m.data) as T);
  }

  resume(): void {
    this.response?.resume();
  }

  close(): void {
    this.abort.abort();
    this.finish();
  }

  /** Resolves when `predicate` holds, or rejects when the stream ends first. */
  until(predicate: (stream: SseStream) => boolean, what = 'the expected messages'): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (predicate(this)) {
          this.listeners.delete(check);
          resolve();
        }
      };
      this.listeners.add(check);
      check();
      void this.ended.then(() => {
        if (this.listeners.delete(check)) {
          if (predicate(this)) resolve();
          else reject(new Error(`the stream ended before ${what} (status ${this.status}, ${this.messages.length} messages)`));
        }
      });
    });
  }

  private consume(chunk: string): void {
    if (this.status !== 200) {
      this.body += chunk;
      return;
    }
    this.pending += chunk;
    let boundary: number;
    // The server writes LF only; a blank line dispatches.
    while ((boundary = this.pending.indexOf('\n\n')) >= 0) {
      const block = this.pending.slice(0, boundary);
      this.pending = this.pending.slice(boundary + 2);
      this.parseBlock(block);
    }
    for (const listener of [...this.listeners]) listener();
  }

  private parseBlock(block: string): void {
    let id: string | null = null;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        this.comments.push(line.slice(1).trim());
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'retry') this.retry = Number(value);
    }
    if (id !== null) this.lastId = id;
    if (data.length > 0) this.messages.push({ id: this.lastId, event, data: data.join('\n') });
  }

  private finish(): void {
    this.markEnded();
  }
}
