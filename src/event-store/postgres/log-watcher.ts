import type { Position } from '../../core/event-store.port.js';
import { comparePositions } from './position.codec.js';

/** What one cheap query learns about the readable end of the log. */
export interface LogProbe {
  /** Last event a reader may see now (below the snapshot's xmin); null for an empty log. */
  head: Position | null;
  /** Committed events exist that readers may not see yet, because an older transaction is open. */
  heldBack: boolean;
}

export interface LogWatcherOptions {
  probe: () => Promise<LogProbe>;
  /** Starts listening for wake-ups from other processes; resolves once listening. */
  listen: (onWake: () => void) => Promise<() => Promise<void>>;
  /** Fallback poll: covers a lost notification. */
  pollIntervalMs: number;
}

interface Waiter {
  cursor: Position | null;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const FIRST_QUICK_REPOLL_MS = 2;
const MAX_QUICK_REPOLL_MS = 50;

/**
 * One per store instance, shared by all its subscriptions, so a thousand idle subscribers cost
 * one probe per wake-up rather than a thousand reads. A subscriber that has read everything
 * waits here until the readable head passes its cursor. Wake-ups: appends through the same
 * store (`wake()`, no round trip), NOTIFY from other processes, the fallback poll, and a quick
 * re-poll with backoff while events are held back behind an older open transaction.
 */
export class LogWatcher {
  private users = 0;
  private head: Position | null = null;
  /** False until a probe ran, and after a wake-up that found nobody waiting. */
  private fresh = false;
  private probing = false;
  private probeAgain = false;
  private readonly waiters = new Set<Waiter>();
  private listening: Promise<() => Promise<void>> | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private quickTimer: NodeJS.Timeout | null = null;
  private quickDelayMs = FIRST_QUICK_REPOLL_MS;
  private closed = false;

  constructor(private readonly options: LogWatcherOptions) {}

  /** Registers a subscription; resolves once wake-ups from other processes are heard. */
  async acquire(): Promise<void> {
    if (this.closed) throw new Error('the event store is closed');
    this.users += 1;
    if (this.users === 1) this.pollTimer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.listening ??= this.options.listen(() => this.wake());
    const listening = this.listening;
    try {
      await listening;
    } catch (error) {
      // Let the next subscriber try again rather than inherit this failure.
      if (this.listening === listening) this.listening = null;
      this.release();
      throw error;
    }
  }

  release(): void {
    this.users -= 1;
    if (this.users > 0) return;
    this.stopTimers();
    const listening = this.listening;
    this.listening = null;
    // Unlistening is housekeeping: a failure only leaves a channel that wakes nobody.
    listening?.then((unlisten) => unlisten()).catch(() => undefined);
  }

  /** Something may have been appended. */
  wake(): void {
    if (this.users === 0) return;
    if (this.waiters.size === 0) {
      // Everyone is busy reading; the next waiter probes instead, so no wake-up is lost.
      this.fresh = false;
      return;
    }
    void this.runProbe();
  }

  /** Resolves once the readable head is past `cursor`, or when `signal` aborts. */
  waitBeyond(cursor: Position | null, signal: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the event store is closed'));
    // The head only moves forward, so a known head past the cursor is proof enough, fresh or not.
    if (signal.aborted || comparePositions(this.head, cursor) > 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => settle(resolve);
      const settle = (finish: () => void) => {
        this.waiters.delete(waiter);
        signal.removeEventListener('abort', onAbort);
        finish();
      };
      const waiter: Waiter = {
        cursor,
        resolve: () => settle(resolve),
        reject: (error) => settle(() => reject(error)),
      };
      this.waiters.add(waiter);
      signal.addEventListener('abort', onAbort);
      if (!this.fresh) void this.runProbe();
    });
  }

  /** Fails every waiting subscription: the store is going away. */
  close(): void {
    this.closed = true;
    this.stopTimers();
    for (const waiter of [...this.waiters]) waiter.reject(new Error('the event store is closed'));
  }

  private async runProbe(): Promise<void> {
    if (this.probing) {
      this.probeAgain = true;
      return;
    }
    this.probing = true;
    let heldBack = false;
    try {
      do {
        this.probeAgain = false;
        this.fresh = true;
        const probe = await this.options.probe();
        heldBack = probe.heldBack;
        if (comparePositions(probe.head, this.head) > 0) this.head = probe.head;
        for (const waiter of [...this.waiters]) {
          if (comparePositions(this.head, waiter.cursor) > 0) waiter.resolve();
        }
      } while (this.probeAgain);
    } catch (error) {
      this.fresh = false;
      // A store failure ends the waiting subscriptions with the error, never silently.
      for (const waiter of [...this.waiters]) waiter.reject(error);
    } finally {
      this.probing = false;
    }
    this.scheduleQuickRepoll(heldBack);
  }

  private scheduleQuickRepoll(heldBack: boolean): void {
    if (!heldBack) {
      this.quickDelayMs = FIRST_QUICK_REPOLL_MS;
      return;
    }
    if (this.quickTimer !== null || this.users === 0) return;
    this.quickTimer = setTimeout(() => {
      this.quickTimer = null;
      this.wake();
    }, this.quickDelayMs);
    // The open transaction may be long (a batch, a stuck client): back off rather than spin.
    this.quickDelayMs = Math.min(this.quickDelayMs * 2, MAX_QUICK_REPOLL_MS);
  }

  private stopTimers(): void {
    if (this.pollTimer !== null) clearInterval(this.pollTimer);
    if (this.quickTimer !== null) clearTimeout(this.quickTimer);
    this.pollTimer = null;
    this.quickTimer = null;
  }
}
