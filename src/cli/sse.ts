import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { unreachable } from './api-client.js';
import { type CliError, problemError } from './errors.js';

/** One Server-Sent Event as dispatched. */
export interface SseMessage {
  id: string | null;
  event: string | null;
  data: string;
}

export interface FollowOptions {
  url: string;
  token: string | null;
  /** Resume after this event id (the API's global position). */
  lastEventId?: string | null;
  /**
   * Called once per event, in order, never twice for one id; the next event waits for it.
   * Answer `'stop'` to end the stream (follow then resolves).
   */
  onEvent(message: SseMessage): 'stop' | void | Promise<'stop' | void>;
  /** Told when the stream dropped and a reconnection follows. */
  onReconnecting?(why: string): void;
  /** Ends the stream from outside (Ctrl-C); follow then resolves. */
  signal?: AbortSignal;
  /** Give up after failing to reconnect for this long (default 60 s). */
  giveUpAfterMs?: number;
}

/** The statuses a reconnection may outwait (the server restarting, overloaded or behind a proxy). */
const TRANSIENT_STATUSES = new Set([408, 429, 502, 503, 504]);
const DEFAULT_RETRY_MS = 2_000;
const DEFAULT_GIVE_UP_AFTER_MS = 60_000;
/** Ids remembered to drop a repeated event: far more than one reconnection can repeat. */
const REMEMBERED_IDS = 10_000;

/**
 * Follows an SSE endpoint of the API until `onEvent` says stop or `signal` aborts. A stream that
 * drops after it was established is resumed with `Last-Event-ID`, after the server's `retry:`
 * interval (or a 429's `Retry-After`), through connection failures and transient statuses, for up
 * to `giveUpAfterMs` in a row. The first connection is not retried: an error then (unreachable,
 * 401, 404, …) rejects at once as a CliError.
 */
export async function follow(options: FollowOptions): Promise<void> {
  const giveUpAfterMs = options.giveUpAfterMs ?? DEFAULT_GIVE_UP_AFTER_MS;
  let lastEventId = options.lastEventId ?? null;
  let retryMs = DEFAULT_RETRY_MS;
  let established = false;
  let failingSince: number | null = null;
  const seen = new RecentIds(REMEMBERED_IDS);
  const outer = options.signal;

  const retryOrThrow = async (error: CliError, waitMs: number): Promise<void> => {
    if (!established) throw error;
    failingSince ??= Date.now();
    if (Date.now() - failingSince >= giveUpAfterMs) throw error;
    options.onReconnecting?.(error.message);
    await pause(waitMs, outer);
  };

  for (;;) {
    if (outer?.aborted) return;
    const connection = new AbortController();
    const abort = () => connection.abort();
    outer?.addEventListener('abort', abort, { once: true });
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (options.token !== null) headers.authorization = `Bearer ${options.token}`;
      if (lastEventId !== null) headers['last-event-id'] = lastEventId;
      let response: Response;
      try {
        response = await fetch(options.url, { headers, signal: connection.signal });
      } catch (error) {
        if (outer?.aborted) return;
        await retryOrThrow(unreachable(new URL(options.url).origin, error), retryMs);
        continue;
      }
      if (response.status !== 200 || response.body === null) {
        const text = await response.text().catch(() => '');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: the text is the detail
        }
        const error = problemError(response.status, body);
        if (!TRANSIENT_STATUSES.has(response.status)) throw error;
        const retryAfter = Number(response.headers.get('retry-after'));
        await retryOrThrow(error, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : retryMs);
        continue;
      }
      established = true;
      failingSince = null;

      const queue: EventSourceMessage[] = [];
      const parser = createParser({
        onEvent: (message) => queue.push(message),
        onRetry: (ms) => (retryMs = ms),
      });
      let stopped = false;
      try {
        for await (const chunk of response.body.pipeThrough(new TextDecoderStream())) {
          parser.feed(chunk);
          while (queue.length > 0) {
            const message = queue.shift()!;
            if (message.id !== undefined && message.id !== '') {
              if (seen.has(message.id)) continue;
              seen.add(message.id);
              lastEventId = message.id;
            }
            if ((await options.onEvent({ id: message.id ?? null, event: message.event ?? null, data: message.data })) === 'stop') {
              stopped = true;
              break;
            }
          }
          if (stopped) break;
        }
      } catch {
        // The connection dropped mid-stream: resumed below.
      }
      if (stopped || outer?.aborted) return;
      options.onReconnecting?.('the event stream ended');
      await pause(retryMs, outer);
    } finally {
      outer?.removeEventListener('abort', abort);
      connection.abort();
    }
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The last `capacity` ids seen, for dropping repeats. */
export class RecentIds {
  private readonly ids = new Set<string>();

  constructor(private readonly capacity: number) {}

  has(id: string): boolean {
    return this.ids.has(id);
  }

  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value!);
  }
}
