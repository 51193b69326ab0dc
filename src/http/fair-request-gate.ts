/**
 * What one caller may hold of the api's request handling at once (promise 13): each key (a
 * token) has at most `inFlight` requests being handled; its further requests wait their turn in
 * a queue of their own, first in, first out, and beyond `queued` waiting ones a request is refused
 * at once. A flood from one token therefore costs every other token at most `inFlight` requests
 * ahead of each of theirs, not the whole flood, and its waiting requests cost only their sockets
 * (their bodies are not read until their turn).
 *
 * Pure bookkeeping: no timers, no I/O. `enter` answers whether the request may go on now, must
 * wait (it is called back when its turn comes), or is refused; `leave` ends a request that went
 * on and hands its place to the next waiting one of the same key.
 */
export interface FairRequestGateLimits {
  /** Requests of one key handled at once. */
  inFlight: number;
  /** Requests of one key waiting beyond those; one more is refused. */
  queued: number;
}

export type GateEntry = { kind: 'go' } | { kind: 'wait'; cancel: () => void } | { kind: 'refused' };

interface KeyState {
  running: number;
  waiting: Array<() => void>;
}

export class FairRequestGate {
  private readonly keys = new Map<string, KeyState>();

  constructor(private readonly limits: FairRequestGateLimits) {}

  /** `proceed` is called once the request may go on, when it had to wait. */
  enter(key: string, proceed: () => void): GateEntry {
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { running: 0, waiting: [] };
      this.keys.set(key, state);
    }
    if (state.running < this.limits.inFlight) {
      state.running++;
      return { kind: 'go' };
    }
    if (state.waiting.length >= this.limits.queued) return { kind: 'refused' };
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

  /** A request that went on has ended: the key's next waiting request goes on in its place. */
  leave(key: string): void {
    const state = this.keys.get(key);
    if (state === undefined) return;
    const next = state.waiting.shift();
    if (next !== undefined) {
      next();
      return;
    }
    state.running--;
    this.forgetIfIdle(key);
  }

  /** Requests of `key` being handled and waiting (for metrics and tests). */
  load(key: string): { running: number; waiting: number } {
    const state = this.keys.get(key);
    return { running: state?.running ?? 0, waiting: state?.waiting.length ?? 0 };
  }

  private forgetIfIdle(key: string): void {
    const state = this.keys.get(key);
    if (state !== undefined && state.running === 0 && state.waiting.length === 0) this.keys.delete(key);
  }
}
