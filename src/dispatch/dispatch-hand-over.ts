import type { DispatchMessage } from './dispatch-message.js';

/** A worker of this process that takes dispatches in memory (`WorkerService.take`). */
export interface DispatchTaker {
  /**
   * True when the worker took the dispatch: it runs it (now or once it has a free slot) or
   * already has it. False: it has no room, or is stopping; the dispatch goes on the bus.
   */
  take(dispatch: DispatchMessage, headers: Record<string, string>): boolean;
}

/**
 * Where the dispatcher hands dispatches to a worker of its own process instead of the bus
 * (FLOSTRA_WORKER_DISPATCH, docs/architecture.md "dispatcher"). The worker attaches itself once
 * it runs; until then, and after it detaches, every dispatch goes on the bus. A dispatch handed
 * over lives in memory only: the dispatcher keeps its checkpoint before it until the log shows
 * the attempt left the queue, so a crash sends it again.
 */
export class DispatchHandOver {
  private taker: DispatchTaker | null = null;

  /** Attaches the worker; the returned function detaches it. */
  attach(taker: DispatchTaker): () => void {
    this.taker = taker;
    return () => {
      if (this.taker === taker) this.taker = null;
    };
  }

  /** True when a worker of this process took the dispatch. */
  offer(dispatch: DispatchMessage, headers: Record<string, string>): boolean {
    return this.taker?.take(dispatch, headers) ?? false;
  }
}

export const DISPATCH_HAND_OVER = Symbol('DispatchHandOver');
