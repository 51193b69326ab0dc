import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Position } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { TIMELINE_READER, type TimelineReader } from '../core/timeline.port.js';
import { LiveSettings } from './live.settings.js';
import { toLiveEvent, type LiveEvent } from './sse-frame.js';

/** What a connection hands the feed: called synchronously, in position order; must not block. */
export interface LiveSink {
  /** This sink's events of one page of the timeline, in position order (never empty). */
  deliver(events: readonly LiveEvent[]): void;
}

/** A stream's subject: one execution or one whole workspace. */
export type LiveTopic = { kind: 'execution'; executionId: string } | { kind: 'workspace'; workspaceId: string };

function topicKey(topic: LiveTopic): string {
  return topic.kind === 'execution' ? `execution:${topic.executionId}` : `workspace:${topic.workspaceId}`;
}

/**
 * The one live feed of this process: a single reader tails the whole timeline (readAll),
 * woken by onAdvance and by a fallback poll, and fans each event out to the connections of its
 * execution and workspace. Database load therefore does not grow with the number of clients,
 * and no connection can slow the feed: delivery is a synchronous push into their buffers.
 */
@Injectable()
export class LiveFeed implements OnApplicationShutdown {
  private readonly topics = new Map<string, Set<LiveSink>>();
  private readonly log: Logger;
  /** Position of the last event fanned out, or skipped while nobody listened. */
  private head: Position | null = null;
  /** Counts subscriptions, so that a skip ahead can tell whether someone joined meanwhile. */
  private joined = 0;
  private started: Promise<void> | null = null;
  private reading = false;
  private wokenWhileReading = false;
  private stopped = false;
  private unsubscribe: (() => void) | null = null;
  /** Subscriptions now, and the hold on the timeline's lag while there are any. */
  private subscriptions = 0;
  private following: (() => void) | null = null;
  private pollTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(TIMELINE_READER) private readonly timeline: TimelineReader,
    @Inject(LiveSettings) private readonly settings: LiveSettings,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ component: 'live-feed' });
  }

  /**
   * From the moment this resolves, `sink` receives every event the timeline applies later:
   * the caller catches up on anything before it from the timeline itself. Starts tailing on
   * the first subscriber; a process that serves no stream never reads.
   */
  async subscribe(topic: LiveTopic, sink: LiveSink): Promise<() => void> {
    // The head must be known before anyone subscribes: were it read afterwards, events applied
    // in between would be behind the head yet possibly after the subscriber's catch-up.
    await (this.started ??= this.start().catch((error: unknown) => {
      this.started = null; // the next subscriber tries again
      throw error;
    }));
    if (this.stopped) throw new Error('the live feed is shut down');
    this.joined++;
    const key = topicKey(topic);
    let sinks = this.topics.get(key);
    if (sinks === undefined) this.topics.set(key, (sinks = new Set()));
    sinks.add(sink);
    if (this.subscriptions++ === 0) this.following = this.timeline.follow();
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      sinks.delete(sink);
      if (sinks.size === 0 && this.topics.get(key) === sinks) this.topics.delete(key);
      if (--this.subscriptions === 0) this.stopFollowing();
    };
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    this.stopFollowing();
    this.unsubscribe?.();
    if (this.pollTimer !== null) clearTimeout(this.pollTimer);
    this.topics.clear();
  }

  private stopFollowing(): void {
    this.following?.();
    this.following = null;
  }

  private async start(): Promise<void> {
    this.head = await this.timeline.checkpoint();
    this.unsubscribe = this.timeline.onAdvance(() => this.wake());
    this.schedulePoll();
  }

  private schedulePoll(): void {
    if (this.stopped) return;
    this.pollTimer = setTimeout(() => {
      this.wake();
      this.schedulePoll();
    }, this.settings.current.feedPollMs);
    this.pollTimer.unref();
  }

  private wake(): void {
    if (this.stopped) return;
    if (this.reading) {
      // One reader at a time; whatever woke us is picked up by one more pass.
      this.wokenWhileReading = true;
      return;
    }
    this.reading = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    try {
      do {
        this.wokenWhileReading = false;
        if (this.topics.size === 0) await this.skipToCheckpoint();
        else await this.readToEnd();
      } while (this.wokenWhileReading && !this.stopped);
    } catch (error) {
      // The fallback poll retries; connections keep what they have and wait.
      this.log.warn('live feed read failed; retrying on the next wake-up', { error: String(error) });
    } finally {
      // In the same turn as the last check of wokenWhileReading: no wake-up can fall in between.
      this.reading = false;
    }
  }

  /**
   * Nobody listens: skip ahead instead of reading events nobody wants. Only when nobody joined
   * during the read either: a newcomer may need the events between the old head and the new.
   */
  private async skipToCheckpoint(): Promise<void> {
    const joinedBefore = this.joined;
    const checkpoint = await this.timeline.checkpoint();
    if (this.joined !== joinedBefore || this.topics.size > 0) {
      this.wokenWhileReading = true;
      return;
    }
    if (checkpoint !== null && (this.head === null || checkpoint > this.head)) this.head = checkpoint;
  }

  private async readToEnd(): Promise<void> {
    const pageSize = this.settings.current.feedPageSize;
    for (;;) {
      const page = await this.timeline.readAll(this.head, pageSize);
      if (this.stopped) return;
      const fresh: LiveEvent[] = [];
      for (const event of page) {
        // Guards against a reader that repeats the cursor's own event: fan out strictly forward.
        if (this.head !== null && event.position <= this.head) continue;
        this.head = event.position;
        fresh.push(toLiveEvent(event));
      }
      this.fanOut(fresh);
      if (page.length < pageSize) return;
    }
  }

  /**
   * One delivery per connection per page, and the same array for every connection of a topic:
   * its socket gets one write however many events, and the bytes are joined once per topic.
   */
  private fanOut(events: readonly LiveEvent[]): void {
    const byTopic = new Map<string, LiveEvent[]>();
    for (const event of events) {
      for (const key of [`execution:${event.executionId}`, `workspace:${event.workspaceId}`]) {
        if (!this.topics.has(key)) continue;
        const batch = byTopic.get(key);
        if (batch === undefined) byTopic.set(key, [event]);
        else batch.push(event);
      }
    }
    for (const [key, batch] of byTopic) {
      for (const sink of [...(this.topics.get(key) ?? [])]) {
        try {
          sink.deliver(batch);
        } catch (error) {
          this.log.error('a live connection failed to take an event', { error: String(error) });
        }
      }
    }
  }
}
