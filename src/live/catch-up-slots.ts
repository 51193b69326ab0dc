/**
 * Bounds how many catch-up reads run at once in this process. A reconnect storm (every client
 * of a restarted server at once) would otherwise take every pooled database connection, and
 * the live feed's own read — which every open stream waits for — would queue behind them.
 */
export class CatchUpSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: () => number) {}

  async run<T>(read: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit()) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await read();
    } finally {
      // Hand the slot straight to the next reader, or give it back.
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.running--;
    }
  }
}
