import { LRUCache } from 'lru-cache';

/**
 * A set that forgets its least recently used keys beyond `capacity`: recent message or attempt
 * ids in bounded memory. Backed by `lru-cache`, whose every operation takes constant time. A
 * `Map` evicting its first key (`keys().next()`) does not: V8 leaves a deleted entry as a hole
 * until the table is rebuilt, and finding the first key skips every hole before it, so at
 * 100,000 keys each eviction cost about 50 µs and a busy process spent most of its time there.
 */
export class LruSet {
  private readonly keys: LRUCache<string, true>;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
    this.keys = new LRUCache({ max: capacity });
  }

  /** Whether the key is remembered; a hit marks it most recently used. */
  has(key: string): boolean {
    return this.keys.get(key) === true;
  }

  add(key: string): void {
    this.keys.set(key, true);
  }

  get size(): number {
    return this.keys.size;
  }
}
