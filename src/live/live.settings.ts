import { Inject, Injectable, Optional } from '@nestjs/common';
import { APP_CONFIG, DEFAULT_SSE_MAX_STREAMS, DEFAULT_SSE_MAX_STREAMS_PER_TOKEN, type AppConfig } from '../config/config.js';

/** Tunables of live progress (SSE). Defaults suit production; tests shorten the timers. */
export interface LiveOptions {
  /** Sent as `retry:` in the first bytes: how long a browser waits before reconnecting. */
  retryMs: number;
  /** A `:` comment goes out at least this often (docs/api.md promises one at least every 15 s). */
  heartbeatMs: number;
  /** Events one connection may hold while its socket is full; one more and it is disconnected. */
  maxBufferedEvents: number;
  /** The same bound in bytes of SSE frames. */
  maxBufferedBytes: number;
  /** A socket that has not drained for this long is disconnected even if little is queued. */
  stallTimeoutMs: number;
  /** Page size of a connection's catch-up reads from the timeline. */
  catchUpPageSize: number;
  /** Catch-up reads running at once in this process; leaves the feed database connections. */
  maxConcurrentCatchUps: number;
  /** Page size of the live feed's reads of the whole timeline. */
  feedPageSize: number;
  /** The live feed reads at least this often, in case a wake-up (onAdvance) was missed. */
  feedPollMs: number;
  /** Streams one token may hold open in this process (FLOSTRA_SSE_MAX_STREAMS_PER_TOKEN); one more is 429. */
  maxStreamsPerToken: number;
  /** Streams this process holds open at most, all tokens together (FLOSTRA_SSE_MAX_STREAMS). */
  maxStreams: number;
}

export const DEFAULT_LIVE_OPTIONS: Readonly<LiveOptions> = Object.freeze({
  retryMs: 2_000,
  heartbeatMs: 10_000,
  maxBufferedEvents: 1_000,
  maxBufferedBytes: 4 * 1024 * 1024,
  stallTimeoutMs: 30_000,
  catchUpPageSize: 200,
  maxConcurrentCatchUps: 8,
  feedPageSize: 500,
  feedPollMs: 1_000,
  maxStreamsPerToken: DEFAULT_SSE_MAX_STREAMS_PER_TOKEN,
  maxStreams: DEFAULT_SSE_MAX_STREAMS,
});

/**
 * The live settings of one process. Read on every use, so `tune` takes effect for new
 * connections and the next timer tick (tests shorten the heartbeat this way:
 * `app.get(LiveSettings).tune({ heartbeatMs: 50 })`).
 */
@Injectable()
export class LiveSettings {
  private options: LiveOptions;
  private readonly listeners = new Set<() => void>();

  constructor(@Optional() @Inject(APP_CONFIG) config?: Pick<AppConfig, 'sseMaxStreamsPerToken' | 'sseMaxStreams'>) {
    this.options = {
      ...DEFAULT_LIVE_OPTIONS,
      ...(config !== undefined ? { maxStreamsPerToken: config.sseMaxStreamsPerToken, maxStreams: config.sseMaxStreams } : {}),
    };
  }

  get current(): Readonly<LiveOptions> {
    return this.options;
  }

  tune(changes: Partial<LiveOptions>): void {
    const next = { ...this.options, ...changes };
    for (const [name, value] of Object.entries(next)) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`LiveSettings.${name} must be a positive integer, got ${value}`);
    }
    this.options = next;
    for (const listener of [...this.listeners]) listener();
  }

  /** Timers that were armed with the old values re-arm through this. */
  onTune(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }
}
