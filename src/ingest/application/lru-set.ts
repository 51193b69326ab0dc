/**
 * A set that forgets its least recently used keys beyond `capacity`: remembers recent message
 * ids in bounded memory. (Older duplicates still meet the decider, which treats a redelivered
 * identical result as a no-op.)
 */
export class LruSet {
  private readonly keys = new Map<string, true>();

  constructor(private readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error('capacity must be a positive integer');
  }

  has(key: string): boolean {
    if (!this.keys.has(key)) return false;
    // Map keeps insertion order: re-inserting marks the key most recently used.
    this.keys.delete(key);
    this.keys.set(key, true);
    return true;
  }

  add(key: string): void {
    this.keys.delete(key);
    this.keys.set(key, true);
    if (this.keys.size > this.capacity) this.keys.delete(this.keys.keys().next().value!);
  }

  get size(): number {
    return this.keys.size;
  }
}
