/**
 * One partition's progress when its messages finish out of order: the offset it may commit is
 * just past the longest prefix of started messages that have all finished. A message started
 * twice (redelivered after a rebalance) counts until both runs finished.
 */
export class PartitionProgress {
  private readonly running = new Map<bigint, number>();
  private next: bigint | null = null;

  start(offset: bigint): void {
    this.running.set(offset, (this.running.get(offset) ?? 0) + 1);
    if (this.next === null || offset + 1n > this.next) this.next = offset + 1n;
  }

  finish(offset: bigint): void {
    const count = this.running.get(offset) ?? 0;
    if (count <= 1) this.running.delete(offset);
    else this.running.set(offset, count - 1);
  }

  /** The offset to commit (the next one to read), or null while nothing was started. */
  committable(): bigint | null {
    if (this.next === null) return null;
    let lowest = this.next;
    for (const offset of this.running.keys()) if (offset < lowest) lowest = offset;
    return lowest;
  }
}
