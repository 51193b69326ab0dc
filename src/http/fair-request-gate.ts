/**
 * What one caller may hold of the api's request handling while others use it too (promise 13).
 * While requests of another key (token) are being handled or waiting, or arrived within
 * `contentionWindowMs`, a key has at most `inFlight` requests being handled; its further requests
 * wait in a queue of their own, first in, first out, and beyond `queued` waiting ones a request is
 * refused at once. A key alone is not held back: one caller's many concurrent requests keep their
 * speed (the store groups their appends), and a flood from one token costs another token at most
 * `inFlight` of its requests ahead of each of theirs, not the whole flood.
 *
 * Pure bookkeeping on the times it is given: no timers, no I/O. `enter` answers whether the
 * request may go on now, must wait (it is called back when its turn comes), or is refused; `leave`
 * ends a request that went on and lets the key's next waiting ones go as its share allows.
 */
export interface FairRequestGateLimits {
  /** Requests of one key handled at once while another key is active. */
  inFlight: number;
  /** Requests of one key waiting beyond those; one more is refused. */
  queued: number;
  /** How long a key counts as active after its last request arrived. */
  contentionWindowMs: number;
}

export type GateEntry = { kind: 'go' } | { kind: 'wait'; cancel: () => void } | { kind: 'refused' };

interface KeyState {
  running: number;
  waiting: Array<() => void>;
}

export class FairRequestGate {
  /** Keys with requests being handled or waiting. */
  private readonly keys = new Map<string, KeyState>();
  /** When each key's last request arrived, oldest first (a key is moved to the end on each). */
  private readonly arrivals = new Map<string, number>();

  constructor(private readonly limits: FairRequestGateLimits) {}

  /** `proceed` is called once the request may go on, when it had to wait. */
  enter(key: string, nowMs: number, proceed: () => void): GateEntry {
    this.arrivals.delete(key);
    this.arrivals.set(key, nowMs);
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { running: 0, waiting: [] };
      this.keys.set(key, state);
    }
    if (state.waiting.length === 0 && state.running < this.share(key, nowMs)) {
      state.running++;
      return { kind: 'go' };
    }
    if (state.waiting.length >= this.limits.queued) {
      this.forgetIfIdle(key);
      return { kind: 'refused' };
    }
    const waiting = state.waiting;
    waiting.push(proceed);
    return {
      kind: 'wait',
      cancel: () => {
        const index = waiting.indexOf(proceed);
        if (index >= 0) waiting.splice(index, 1);
        this.forgetIfIdle(key);
      },
    };
  }

  /** A request that went on has ended: the key's waiting requests go on as far as its share allows. */
  leave(key: string, nowMs: number): void {
    const state = this.keys.get(key);
    if (state === undefined) return;
    state.running--;
    const share = this.share(key, nowMs);
    while (state.waiting.length > 0 && state.running < share) {
      state.running++;
      state.waiting.shift()!();
    }
    this.forgetIfIdle(key);
  }

  /** Requests of `key` being handled and waiting (for metrics and tests). */
  load(key: string): { running: number; waiting: number } {
    const state = this.keys.get(key);
    return { running: state?.running ?? 0, waiting: state?.waiting.length ?? 0 };
  }

  /** How many requests `key` may have in flight now: its share while another key is active. */
  private share(key: string, nowMs: number): number {
    const horizon = nowMs - this.limits.contentionWindowMs;
    for (const [other, arrivedAt] of this.arrivals) {
      if (arrivedAt >= horizon) break;
      this.arrivals.delete(other);
    }
    const othersArrived = this.arrivals.size - (this.arrivals.has(key) ? 1 : 0);
    const othersBusy = this.keys.size - (this.keys.has(key) ? 1 : 0);
    return othersArrived > 0 || othersBusy > 0 ? this.limits.inFlight : Number.POSITIVE_INFINITY;
  }

  private forgetIfIdle(key: string): void {
    const state = this.keys.get(key);
    if (state !== undefined && state.running === 0 && state.waiting.length === 0) this.keys.delete(key);
  }
}
