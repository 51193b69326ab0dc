/**
 * Coalesces identical reads (same key) made while one is in flight: at most one read per key
 * is out at a time, and every call that arrives meanwhile shares the next one, sent as soon as
 * the current one answers. A call never shares a read that was sent before it was made, so
 * each answer still reflects every commit that completed before its call; it only saves the
 * statements that many concurrent callers of one stream (a workflow's definition, a
 * workspace's settings at every start) would otherwise each send. An idle key reads at once,
 * alone, as before. Reads of different keys never wait for each other.
 */
export class ReadCoalescer<T> {
  private readonly keys = new Map<string, KeyState<T>>();

  /** `run` performs the read; it is called once per round, for every caller of that round. */
  read(key: string, run: () => Promise<T>): Promise<T> {
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { inFlight: false, next: null };
      this.keys.set(key, state);
    }
    if (!state.inFlight) return this.start(key, state, run);
    state.next ??= deferred<T>(run);
    return state.next.promise;
  }

  private start(key: string, state: KeyState<T>, run: () => Promise<T>): Promise<T> {
    state.inFlight = true;
    const answer = run();
    void answer
      .catch(() => undefined)
      .then(() => {
        state.inFlight = false;
        const waiting = state.next;
        state.next = null;
        if (waiting === null) {
          this.keys.delete(key);
          return;
        }
        this.start(key, state, waiting.run).then(waiting.resolve, waiting.reject);
      });
    return answer;
  }
}

interface KeyState<T> {
  inFlight: boolean;
  /** Callers that arrived while a read was out: they share the next one. */
  next: Deferred<T> | null;
}

interface Deferred<T> {
  promise: Promise<T>;
  run: () => Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(run: () => Promise<T>): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, run, resolve, reject };
}
