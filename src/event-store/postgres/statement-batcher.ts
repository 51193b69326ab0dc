/** A caller waiting in a batch: its request, and how to answer it. */
export interface Pending<Req, Res> {
  request: Req;
  resolve(result: Res): void;
  reject(error: unknown): void;
}

export interface StatementBatcherOptions {
  /** Batches sent at once; requests that arrive while all are out wait and go together in the next. */
  maxInFlight: number;
  /** Requests in one batch at most. */
  maxBatch: number;
}

/**
 * Groups requests into batches without a timer: while `maxInFlight` batches are out, new
 * requests queue, and the next batch carries all of them (up to `maxBatch`) in one statement.
 * A request to an idle batcher leaves at once, alone. Requests made in one turn of the event
 * loop start together. `send` answers every request of its batch and never throws.
 */
export class StatementBatcher<Req, Res> {
  private readonly queue: Pending<Req, Res>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly send: (batch: Pending<Req, Res>[]) => Promise<void>,
    private readonly options: StatementBatcherOptions,
  ) {
    for (const [name, value] of Object.entries(options)) {
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
    }
  }

  add(request: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      // Once per turn, after its synchronous code: requests made together start together.
      if (this.scheduled) return;
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        this.pump();
      });
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.inFlight += 1;
      void this.send(batch).finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
    }
  }
}
