/**
 * Announces appends to other processes (NOTIFY) without taxing the appends. The first request
 * after a quiet spell is sent at once; requests arriving while one is in flight, or within
 * `minIntervalMs` of the last, fold into one more. Under load that caps NOTIFYs at a few
 * hundred a second, each waking every subscriber of every other process for a whole batch.
 *
 * A NOTIFY that fails is reported, not thrown: the appends it announced are committed, and
 * subscribers of other processes still find them at their next poll.
 */
export class WakeNotifier {
  private pending = false;
  private running: Promise<void> | null = null;
  private lastSentAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly send: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
    private readonly minIntervalMs = 5,
  ) {}

  request(): void {
    this.pending = true;
    this.running ??= this.drain();
  }

  /** Resolves once every requested wake-up was sent (or failed). */
  async flush(): Promise<void> {
    await this.running;
  }

  private async drain(): Promise<void> {
    while (this.pending) {
      const wait = this.lastSentAt + this.minIntervalMs - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      this.pending = false;
      this.lastSentAt = performance.now();
      try {
        await this.send();
      } catch (error) {
        this.onError(error);
      }
    }
    this.running = null;
  }
}
