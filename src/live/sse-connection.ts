import type { Principal } from '../auth/authorization.js';
import type { Position } from '../core/event-store.port.js';
import type { TimelineEvent } from '../core/timeline.port.js';
import type { LiveOptions } from './live.settings.js';
import type { LiveSink, LiveTopic } from './live-feed.js';
import { commentFrame, HEARTBEAT_FRAME, toLiveEvent, type LiveEvent } from './sse-frame.js';

/** The part of a ServerResponse a connection writes to (a Writable in unit tests). */
export interface SseOutput {
  write(chunk: string | Buffer): boolean;
  end(chunk?: string): unknown;
  destroy(): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

// The feed hands every connection of a topic the same array: join its frames once for all.
const joined = new WeakMap<readonly LiveEvent[], Buffer>();

function joinedFrames(events: readonly LiveEvent[]): Buffer {
  if (events.length === 1) return events[0].frame;
  let frames = joined.get(events);
  if (frames === undefined) joined.set(events, (frames = Buffer.concat(events.map((event) => event.frame))));
  return frames;
}

export type CloseReason = 'client_gone' | 'slow_client' | 'stalled' | 'revoked' | 'shutdown' | 'failed';

/** Reads the timeline strictly after a position: one page of this connection's topic. */
export type CatchUpRead = (after: Position | null, limit: number) => Promise<TimelineEvent[]>;

export interface SseConnectionInit {
  output: SseOutput;
  principal: Principal;
  /** The workspace whose viewer role keeps this stream open. */
  workspaceId: string;
  topic: LiveTopic;
  /** Everything strictly after this position is sent (null: from the first event). */
  cursor: Position | null;
  options: () => Readonly<LiveOptions>;
  /** Told the size of every chunk handed to the socket (for metrics). */
  onSent?: (bytes: number) => void;
  onClosed: (connection: SseConnection, reason: CloseReason) => void;
}

/**
 * Promise 8 (live progress without loss, docs/architecture.md) is kept here: one client's stream. It catches up
 * from the timeline while the live feed buffers for it, switches to live at the seam with no
 * gap and no duplicate (positions only ever move forward past `cursor`), and holds at most a
 * bounded buffer while its socket is full: a client that cannot keep up is disconnected, so it
 * resumes with Last-Event-ID, instead of having events silently skipped.
 */
export class SseConnection implements LiveSink {
  readonly principal: Principal;
  readonly workspaceId: string;
  readonly topic: LiveTopic;
  private phase: 'catching_up' | 'live' | 'closed' = 'catching_up';
  /** Position of the last event handed to the socket. */
  private cursor: Position | null;
  /** Live events not written yet: during catch-up, or while the socket is full. */
  private queue: LiveEvent[] = [];
  private queuedBytes = 0;
  /** Times the catch-up buffer overflowed and was dropped (the timeline still has those events). */
  private overflows = 0;
  private fullSince: number | null = null;
  private drainWaiters: (() => void)[] = [];
  private readonly init: SseConnectionInit;

  constructor(init: SseConnectionInit) {
    this.init = init;
    this.principal = init.principal;
    this.workspaceId = init.workspaceId;
    this.topic = init.topic;
    this.cursor = init.cursor;
  }

  get closed(): boolean {
    return this.phase === 'closed';
  }

  /** From the live feed: queued while catching up or while the socket is full, else written. */
  deliver(events: readonly LiveEvent[]): void {
    if (this.phase === 'closed') return;
    if (this.phase === 'catching_up') {
      for (const event of events) this.enqueue(event);
      // Too much arrived during catch-up: drop it all and let catch-up read it from the timeline.
      if (this.overLimit()) this.dropQueue();
      return;
    }
    // Usually all of them: then `events` itself is sent, whose joined bytes its topic shares.
    const fresh = this.isAfterCursor(events[0].position) ? events : events.filter((event) => this.isAfterCursor(event.position));
    if (fresh.length === 0) return;
    if (this.fullSince !== null || this.queue.length > 0) {
      for (const event of fresh) this.enqueue(event);
      if (this.overLimit()) this.close('slow_client');
      return;
    }
    this.send(fresh);
  }

  /**
   * Reads the timeline after the cursor, page by page, until a short page that began after the
   * last overflow: from then on the queue holds every event the page did not, and going live
   * is seamless. Waits for the socket between pages, so a slow client slows only itself.
   */
  async catchUp(read: CatchUpRead): Promise<void> {
    while (this.phase === 'catching_up') {
      const pageSize = this.init.options().catchUpPageSize;
      const overflowsBefore = this.overflows;
      const page = await read(this.cursor, pageSize);
      if (this.closed) return;
      const fresh = page.filter((event) => this.isAfterCursor(event.position)).map(toLiveEvent);
      if (fresh.length > 0) this.send(fresh);
      if (this.fullSince !== null) await this.drained();
      if (page.length < pageSize && this.overflows === overflowsBefore && this.phase === 'catching_up') this.goLive();
    }
  }

  /** Called by the hub on every tick: a heartbeat comment, or the end of a stalled socket. */
  tick(now: number): void {
    if (this.phase === 'closed') return;
    if (this.fullSince !== null) {
      if (now - this.fullSince >= this.init.options().stallTimeoutMs) this.close('stalled');
      return;
    }
    this.write(HEARTBEAT_FRAME);
  }

  close(reason: CloseReason, note?: string): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.dropQueue();
    // A full socket would deliver a polite ending only after everything queued: cut it instead.
    if (reason === 'slow_client' || reason === 'stalled' || this.fullSince !== null) this.init.output.destroy();
    else if (reason !== 'client_gone') this.init.output.end(commentFrame(`stream ended: ${note ?? reason}`));
    this.settleDrainWaiters();
    this.init.onClosed(this, reason);
  }

  private goLive(): void {
    this.phase = 'live';
    const queued = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    if (queued.length > 0) this.deliver(queued);
  }

  /** Events after the cursor, in order, in one write. */
  private send(events: readonly LiveEvent[]): void {
    this.cursor = events[events.length - 1].position;
    this.write(joinedFrames(events));
  }

  private write(chunk: string | Buffer): void {
    this.init.onSent?.(typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length);
    // false: Node buffered the chunk but the socket is full; write no more until 'drain'.
    if (this.init.output.write(chunk) || this.fullSince !== null) return;
    this.fullSince = Date.now();
    this.init.output.once('drain', () => this.onDrain());
  }

  private onDrain(): void {
    this.fullSince = null;
    if (this.phase === 'live' && this.queue.length > 0) {
      // All of it at once: Node buffers what the socket cannot take, and the next 'drain' comes.
      const queued = this.queue.filter((event) => this.isAfterCursor(event.position));
      this.queue = [];
      this.queuedBytes = 0;
      if (queued.length > 0) this.send(queued);
    }
    this.settleDrainWaiters();
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private settleDrainWaiters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private isAfterCursor(position: Position): boolean {
    return this.cursor === null || position > this.cursor;
  }

  private enqueue(event: LiveEvent): void {
    this.queue.push(event);
    this.queuedBytes += event.frame.length;
  }

  private overLimit(): boolean {
    const { maxBufferedEvents, maxBufferedBytes } = this.init.options();
    return this.queue.length > maxBufferedEvents || this.queuedBytes > maxBufferedBytes;
  }

  private dropQueue(): void {
    this.queue = [];
    this.queuedBytes = 0;
    this.overflows++;
  }
}
