import type { Position, RecordedEvent } from '../../core/event-store.port.js';

/** A batch served from the tail, and where the subscription stands after it. */
export interface TailBatch {
  events: RecordedEvent[];
  /** The last event examined: past the events of other streams, so they are not examined again. */
  next: Position;
}

/** Where a refresh of the tail reads from; tagged so that a refresh that raced a reset is dropped. */
export interface RefreshPoint {
  readonly generation: number;
  readonly after: Position;
}

/**
 * A contiguous window of the global log shared by the subscriptions at its head: every event,
 * of every stream, in (from, to], where `to` is a readable head (nothing can appear at or below
 * it later). A subscription whose cursor lies in the window takes its batches from memory, so
 * one read per wake-up serves every subscription instead of one read each.
 *
 * Positions are compared as plain strings: their fixed width makes string order log order.
 */
export class LogTail {
  /** The window is `events` from index `first` on; see `extend`. */
  private events: RecordedEvent[] = [];
  private first = 0;
  /** Null while stopped. */
  private from: Position | null = null;
  private to: Position | null = null;
  private members = 0;
  private generation = 0;

  constructor(private readonly capacity: number) {}

  /** The readable head the window reaches, or null while stopped. */
  get head(): Position | null {
    return this.to;
  }

  /**
   * A subscription that read directly up to the readable head `cursor` joins; the first one
   * starts the window there, empty (and learns so from the result).
   */
  join(cursor: Position): boolean {
    this.members += 1;
    if (this.to !== null) return false;
    this.from = this.to = cursor;
    return true;
  }

  /** The last member leaving stops the tail: a store idle for long must not re-read its gap. */
  leave(): void {
    this.members -= 1;
    if (this.members > 0) return;
    this.events = [];
    this.first = 0;
    this.from = this.to = null;
    this.generation += 1;
  }

  /**
   * The next batch after `cursor`, at most `maxCount` events of the given streams; null when the
   * window cannot serve it (stopped, or the cursor has fallen behind the window).
   */
  take(cursor: Position, prefixes: string[] | null, maxCount: number): TailBatch | null {
    if (this.from === null || this.to === null || cursor < this.from) return null;
    if (cursor >= this.to) return { events: [], next: cursor };
    const events: RecordedEvent[] = [];
    for (let index = this.firstAfter(cursor); index < this.events.length; index++) {
      const event = this.events[index];
      if (prefixes !== null && !prefixes.some((prefix) => event.streamId.startsWith(prefix))) continue;
      events.push(event);
      if (events.length === maxCount) return { events, next: event.position };
    }
    return { events, next: this.to };
  }

  /** Whether a subscription at `cursor` has something to take, or must leave the window. */
  hasBeyond(cursor: Position): boolean {
    return this.to === null || this.to > cursor;
  }

  /** Null while stopped: nobody needs the tail read. */
  refreshPoint(): RefreshPoint | null {
    return this.to === null ? null : { generation: this.generation, after: this.to };
  }

  /**
   * Adds what a refresh read after `point.after`, unfiltered and in order, up to `head`: the
   * readable head of its snapshot when it read everything readable, else its last event.
   * Refreshes may overlap (one sent with an append, one by the watcher): a refresh that started
   * at or before the window's end read every event from there to where it reached, so what lies
   * beyond the window is added and the rest, already held, is skipped. False when the refresh
   * was for a window that stopped since.
   */
  extend(point: RefreshPoint, events: RecordedEvent[], head: Position | null): boolean {
    if (point.generation !== this.generation || this.to === null || point.after > this.to) return false;
    const end = this.to;
    this.events.push(...(point.after === end ? events : events.filter((event) => event.position > end)));
    const last = events.length > 0 ? events[events.length - 1].position : point.after;
    const reached = head !== null && head > last ? head : last;
    if (reached > end) this.to = reached;
    // Dropping the oldest only moves `first`; the array is compacted once the dropped part is as
    // long as the window. Removing them from the front at every refresh copied the whole window
    // each time: 30-40 us per refresh at the default capacity, a refresh per append.
    const excess = this.events.length - this.first - this.capacity;
    if (excess > 0) {
      this.first += excess;
      this.from = this.events[this.first - 1].position;
      if (this.first >= this.capacity) {
        this.events = this.events.slice(this.first);
        this.first = 0;
      }
    }
    return true;
  }

  /** Index of the first event after `cursor` (binary search: the window is in position order). */
  private firstAfter(cursor: Position): number {
    let low = this.first;
    let high = this.events.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.events[middle].position <= cursor) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
