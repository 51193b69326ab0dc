/** One caller's request in a batch, and how to answer it. */
export interface Pending<Request, Result> {
  readonly request: Request;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

export interface GroupBatcherOptions {
  /** Batches out at once; requests that arrive while all are out wait and go together in the next. */
  maxInFlight: number;
  /** Requests in one batch at most. */
  maxBatch: number;
}

/**
 * Natural batching of one kind of statement: while `maxInFlight` batches are out, new requests
 * queue, and the next batch carries all of them. No timer: a request to an idle batcher leaves
 * at once, alone. Requests leave in call order. `send` must settle every request of its batch
 * and never reject.
 */
export class GroupBatcher<Request, Result> {
  private readonly queue: Pending<Request, Result>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly send: (batch: Pending<Request, Result>[]) => Promise<void>,
    private readonly options: GroupBatcherOptions,
  ) {
    for (const [name, value] of Object.entries(options)) {
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
    }
  }

  submit(request: Request): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
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
      void this.send(batch)
        .catch((error: unknown) => batch.forEach((pending) => pending.reject(error)))
        .finally(() => {
          this.inFlight -= 1;
          this.pump();
        });
    }
  }
}
