import type { Position, RecordedEvent } from '../../core/event-store.port.js';
import type { LogTail } from './log-tail.js';
import type { LogWatcher } from './log-watcher.js';

/** A page read directly from the log, and the readable head in the page's snapshot. */
export interface LogPage {
  events: RecordedEvent[];
  /** Nothing matching lies between the page and it; null for an empty log. */
  head: Position | null;
}

/** What a subscription runs over: shared by all subscriptions of one store. */
export interface LogSource {
  tail: LogTail;
  watcher: LogWatcher;
  readPage(after: Position, maxCount: number, prefixes: string[] | null): Promise<LogPage>;
}

export interface LogSubscription {
  /** Position strictly after which to deliver (the log's start position for the whole log). */
  after: Position;
  prefixes: string[] | null;
  batchSize: number;
  signal: AbortSignal;
}

/**
 * A catch-up subscription. Behind the shared tail it reads pages of its own (history, or after
 * falling behind the tail's capacity); once a short page brings it to a readable head it joins
 * the tail and takes its batches from memory, waiting in the watcher while the tail has nothing
 * beyond its cursor. Either way it only ever moves forward over positions below a readable
 * head, which is what keeps a late-committing transaction from being skipped.
 */
export async function* subscribeToLog(source: LogSource, subscription: LogSubscription): AsyncGenerator<RecordedEvent[]> {
  const { tail, watcher } = source;
  const { prefixes, batchSize, signal } = subscription;
  let cursor = subscription.after;
  let member = false;
  await watcher.acquire();
  try {
    while (!signal.aborted) {
      const batch = member ? tail.take(cursor, prefixes, batchSize) : null;
      if (batch === null) {
        if (member) {
          // The tail moved past this cursor while its batch was being handled: catch up directly.
          tail.leave();
          member = false;
        }
        const page = await source.readPage(cursor, batchSize, prefixes);
        if (signal.aborted) return;
        if (page.events.length > 0) {
          cursor = page.events[page.events.length - 1].position;
          yield page.events;
          if (page.events.length === batchSize) continue;
        }
        // A short page saw everything readable: skip to the head, so that appends to streams
        // outside the prefixes do not make this subscription re-read the same range.
        if (page.head !== null && page.head > cursor) cursor = page.head;
        const startedTail = tail.join(cursor);
        member = true;
        // The tail must read at least up to where this page saw the head, and a new window must
        // not trust what the watcher learnt for a previous one.
        if (startedTail || tail.head! < cursor) watcher.wake();
        continue;
      }
      if (batch.events.length > 0) {
        cursor = batch.events[batch.events.length - 1].position;
        yield batch.events;
        if (batch.events.length === batchSize) continue;
      }
      cursor = batch.next;
      await watcher.waitUntil(() => tail.hasBeyond(cursor), signal);
    }
  } finally {
    if (member) tail.leave();
    watcher.release();
  }
}
