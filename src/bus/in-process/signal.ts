/** A level-free wake-up: `wait()` resolves at the next `notify()` (or at once after `close()`). */
export class Signal {
  private waiters: (() => void)[] = [];
  private closed = false;

  wait(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  close(): void {
    this.closed = true;
    this.notify();
  }
}
