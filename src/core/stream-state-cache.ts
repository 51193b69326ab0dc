import { LRUCache } from 'lru-cache';
import type { StreamRevision } from './event-store.port.js';

/** A stream's folded state as of its last event's revision. */
export interface CachedStreamState<State> {
  revision: StreamRevision;
  state: State;
}

/**
 * Folded states of the most recently used streams, bounded in count. Entries may be stale when
 * another process wrote since: the command handler relies on the append's expected revision,
 * never on the entry being current. States must be immutable (deciders' `evolve` returns new
 * values), since concurrent commands share them.
 */
export class StreamStateCache<State> {
  // lru-cache, not a Map re-inserted on use: see LruSet (lru-set.ts) for what that costs.
  private readonly entries: LRUCache<string, CachedStreamState<State>>;

  constructor(capacity = 10_000) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
    this.entries = new LRUCache({ max: capacity });
  }

  /** The kept state of the stream, marked most recently used. */
  get(streamId: string): CachedStreamState<State> | undefined {
    return this.entries.get(streamId);
  }

  /** Whether a state of the stream is kept (without marking it used). */
  has(streamId: string): boolean {
    return this.entries.has(streamId);
  }

  /** Keeps the newer of the stored and the given state: a slow writer never rolls an entry back. */
  set(streamId: string, entry: CachedStreamState<State>): void {
    const current = this.entries.peek(streamId);
    if (current !== undefined && current.revision > entry.revision) return;
    this.entries.set(streamId, entry);
  }

  delete(streamId: string): void {
    this.entries.delete(streamId);
  }
}
