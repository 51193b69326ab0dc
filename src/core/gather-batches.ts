export interface GatherOptions {
  /**
   * How long a short batch waits for more to join it, counted from its arrival, when it came
   * within this long of the batch before (appends are streaming in). 0: never waits. A function
   * is asked again at each batch's arrival.
   */
  windowMs: number | (() => number);
  /** A batch of at least this many items goes at once; gathering stops once it is reached. */
  maxCount: number;
  /** Ends the reading; the batches gathered so far are dropped. */
  signal: AbortSignal;
  /**
   * Subscribes to "someone waits for what is gathered": each call of `cut` ends the current
   * wait for more at once, or, between waits, lets the next batch go without one. Returns the
   * unsubscribe.
   */
  hurry?: (cut: () => void) => () => void;
}

/**
 * Merges the batches of a subscription for a consumer that pays per batch (a transaction per
 * batch) and need not have each one at once: while batches stream in (one came within
 * `windowMs` of the one before), a short batch waits up to `windowMs` for the next ones to join
 * it. A batch after a quiet spell goes at once, and full batches go straight through. A
 * projector then writes one transaction for a few appends instead of one per append, without
 * delaying a lone one.
 *
 * `open` receives a signal of its own, aborted when the consumer stops (returns, breaks, throws)
 * or `options.signal` aborts, so a read in flight never outlives the consumer. A failure of the
 * source comes after the batches gathered before it. Batches are never split: a merged batch
 * holds at most `maxCount - 1` items plus one whole batch.
 */
export async function* gatherBatches<T>(open: (signal: AbortSignal) => AsyncIterable<T[]>, options: GatherOptions): AsyncGenerator<T[]> {
  const reading = new AbortController();
  const stop = () => reading.abort();
  if (options.signal.aborted) return;
  options.signal.addEventListener('abort', stop);
  const iterator = open(reading.signal)[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<T[]>> | null = null;
  const next = () => (pending ??= iterator.next());
  let lastArrival = Number.NEGATIVE_INFINITY;
  // A hurry between waits spares the next batch its wait; one during a wait ends it.
  let hurried = false;
  let endWait: (() => void) | null = null;
  const stopHurrying =
    options.hurry?.(() => {
      hurried = true;
      endWait?.();
    }) ?? (() => undefined);
  try {
    for (;;) {
      const first = await next();
      pending = null;
      if (first.done === true) return;
      let gathered = first.value;
      let ended = false;
      let failure: { error: unknown } | null = null;
      const arrived = performance.now();
      const windowMs = typeof options.windowMs === 'function' ? options.windowMs() : options.windowMs;
      const streaming = arrived - lastArrival < windowMs;
      lastArrival = arrived;
      if (streaming && !hurried && gathered.length < options.maxCount) {
        const deadline = arrived + windowMs;
        while (gathered.length < options.maxCount) {
          const left = deadline - performance.now();
          if (left <= 0 || hurried) break;
          let result: IteratorResult<T[]> | null;
          try {
            result = await within(next(), left, (end) => (endWait = end));
          } catch (error) {
            failure = { error };
            break;
          } finally {
            endWait = null;
          }
          if (result === null) break;
          pending = null;
          if (result.done === true) {
            ended = true;
            break;
          }
          gathered = gathered.concat(result.value);
          lastArrival = performance.now();
        }
      }
      hurried = false;
      if (options.signal.aborted) return;
      if (gathered.length > 0) yield gathered;
      if (failure !== null) throw failure.error;
      if (ended) return;
    }
  } finally {
    stopHurrying();
    options.signal.removeEventListener('abort', stop);
    stop();
    // A source that failed after the last batch was yielded: nothing waits for it any more.
    const inFlight = pending as Promise<IteratorResult<T[]>> | null; // set by next(), which the compiler does not follow
    await inFlight?.catch(() => undefined);
    await iterator.return?.();
  }
}

/**
 * The promise's value, or null when `ms` pass first or the function handed to `cancellable` is
 * called; a rejection propagates, whenever it comes.
 */
function within<V>(promise: Promise<V>, ms: number, cancellable: (end: () => void) => void): Promise<V | null> {
  return new Promise<V | null>((resolve, reject) => {
    const timer = setTimeout(() => resolve(null), ms);
    cancellable(() => {
      clearTimeout(timer);
      resolve(null);
    });
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
