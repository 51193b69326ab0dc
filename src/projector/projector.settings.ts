import { Injectable } from '@nestjs/common';

/** Tunables of queries over read models. Defaults suit production; tests shorten them. */
export interface ReadModelOptions {
  /** How long a query waits for a read model to reach the position it must reflect; then 503. */
  readWaitMs: number;
  /** A waiting query re-reads the checkpoint at least this often, in case a wake-up was lost. */
  readPollMs: number;
  /** The admin view counts lag exactly up to this many events, and says "at least" beyond. */
  lagScanLimit: number;
}

export const DEFAULT_READ_MODEL_OPTIONS: Readonly<ReadModelOptions> = Object.freeze({
  readWaitMs: 5_000,
  readPollMs: 100,
  lagScanLimit: 10_000,
});

/** Read on every use, so `tune` takes effect at once: `app.get(ReadModelSettings).tune({ readWaitMs: 200 })`. */
@Injectable()
export class ReadModelSettings {
  private options: ReadModelOptions = { ...DEFAULT_READ_MODEL_OPTIONS };

  get current(): Readonly<ReadModelOptions> {
    return this.options;
  }

  tune(changes: Partial<ReadModelOptions>): void {
    const next = { ...this.options, ...changes };
    for (const [name, value] of Object.entries(next)) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`ReadModelSettings.${name} must be a positive integer, got ${value}`);
    }
    this.options = next;
  }
}
