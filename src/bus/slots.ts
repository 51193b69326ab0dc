/** Counts free handler slots; `acquire` waits for one or for `cancel()`, which frees every waiter. */
export class Slots {
  private waiters: (() => void)[] = [];

  constructor(private free: number) {}

  /** Takes a free slot if there is one, without waiting. */
  tryAcquire(): boolean {
    if (this.free === 0) return false;
    this.free--;
    return true;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Hands the slot straight to the next waiter, if any. */
  release(): void {
    const next = this.waiters.shift();
    if (next !== undefined) next();
    else this.free++;
  }

  /** Wakes every waiter as if it got a slot: the owner has stopped, so each will only release it. */
  cancel(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
