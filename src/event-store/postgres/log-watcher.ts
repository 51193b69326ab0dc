/** What one read of the log's end learns, besides what it brought the waiters. */
export interface LogProbe {
  /** Committed events exist that readers may not see yet, because an older transaction is open. */
  heldBack: boolean;
  /** The read stopped short of the readable head: read again without waiting for a wake-up. */
  more?: boolean;
  /** How many transactions' events it brought: more than one means appends are streaming in. */
  appends?: number;
}

export interface LogWatcherOptions {
  /** Reads the end of the log (the shared tail's refresh); waiters check their condition after it. */
  probe: () => Promise<LogProbe>;
  /** Starts listening for wake-ups from other processes; resolves once listening. */
  listen: (onWake: () => void) => Promise<() => Promise<void>>;
  /** Fallback poll: covers a lost notification. */
  pollIntervalMs: number;
  /**
   * While appends stream in (the last probe brought more than one transaction's events, or
   * wake-ups arrived while it ran), wait this long after a wake-up before probing, so one read
   * serves a burst. Otherwise the next wake-up is probed at once. Default 0.
   */
  settleMs?: number;
  /** Wait settleMs after every wake-up, streaming or not: for a database in this process. */
  alwaysSettle?: boolean;
}

interface Waiter {
  ready: () => boolean;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const FIRST_QUICK_REPOLL_MS = 2;
const MAX_QUICK_REPOLL_MS = 50;

/**
 * One per store instance, shared by all its subscriptions, so a thousand idle subscribers cost
 * one probe per wake-up rather than a thousand reads. A subscriber that has read everything
 * waits here until a probe brings it something (the store's probe refreshes the shared tail of
 * the log, see log-tail.ts). Wake-ups: appends through the same store (`wake()`, no round
 * trip), NOTIFY from other processes, the fallback poll, and a quick re-poll with backoff while
 * events are held back behind an older open transaction.
 */
export class LogWatcher {
  private users = 0;
  /** False until a probe ran, and after a wake-up that found nobody waiting. */
  private fresh = false;
  private probing = false;
  private probeAgain = false;
  /** The last probe stopped short of the head: the next one need not wait for a burst to land. */
  private behind = false;
  private readonly waiters = new Set<Waiter>();
  private listening: Promise<() => Promise<void>> | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private quickTimer: NodeJS.Timeout | null = null;
  private quickDelayMs = FIRST_QUICK_REPOLL_MS;
  /** The last probe brought the events of several appends: more are likely on their way. */
  private streaming = false;
  /** Wake-ups so far: those that come while a probe runs tell of a stream of appends. */
  private wakes = 0;
  private endSettle: (() => void) | null = null;
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
    this.wakes += 1;
    if (this.waiters.size === 0) {
      // Everyone is busy reading; the next waiter probes instead, so no wake-up is lost.
      this.fresh = false;
      return;
    }
    void this.runProbe();
  }

  /**
   * A write of this process that may have held back the log's readable end has ended: when the
   * last probe found events held back, probe now instead of at the next quick re-poll.
   */
  holderEnded(): void {
    if (this.quickTimer === null) return;
    clearTimeout(this.quickTimer);
    this.quickTimer = null;
    this.wake();
  }

  /**
   * A read of the log's end made by someone else (the store sends one behind each append batch)
   * brought what a probe would have: waiters are served as after a probe of the watcher's own,
   * without one. A read that stopped short of the head is read on, and held-back events are
   * re-polled, as after a probe.
   */
  served(probe: LogProbe): void {
    if (this.users === 0 || this.closed) return;
    for (const waiter of [...this.waiters]) {
      if (waiter.ready()) waiter.resolve();
    }
    if (probe.more === true) {
      this.behind = true;
      this.wake();
      return;
    }
    // A probe running now resets the re-poll's backoff by its own finding; this one only adds.
    if (probe.heldBack) this.scheduleQuickRepoll(true);
  }

  /** Resolves once `ready()` holds (checked now and after each probe), or when `signal` aborts. */
  waitUntil(ready: () => boolean, signal: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the event store is closed'));
    if (signal.aborted || ready()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => settle(resolve);
      const settle = (finish: () => void) => {
        this.waiters.delete(waiter);
        signal.removeEventListener('abort', onAbort);
        finish();
      };
      const waiter: Waiter = {
        ready,
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
    this.endSettle?.();
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
        // Under a stream of appends, let the next ones land first: one read then serves them
        // all, at the cost of a few milliseconds. Wake-ups meanwhile are part of the burst, not a
        // reason to probe again. A lone append is read at once: nothing else is on its way.
        const streaming = this.streaming || this.options.alwaysSettle === true;
        const settleMs = this.behind || !streaming ? 0 : (this.options.settleMs ?? 0);
        if (settleMs > 0) await this.settle(settleMs);
        if (this.closed) break;
        this.probeAgain = false;
        this.fresh = true;
        const wakesBefore = this.wakes;
        const probe = await this.options.probe();
        heldBack = probe.heldBack;
        this.behind = probe.more === true;
        // Appends stream in when one read brings several, or more wake-ups came while it ran
        // (a database that runs one statement at a time reads them one by one).
        this.streaming = (probe.appends ?? 0) > 1 || this.wakes !== wakesBefore;
        for (const waiter of [...this.waiters]) {
          if (waiter.ready()) waiter.resolve();
        }
        if (this.behind) {
          // Waiters that got something read on and ask again; those still waiting ask now.
          this.fresh = false;
          if (this.waiters.size > 0) this.probeAgain = true;
        }
      } while (this.probeAgain);
    } catch (error) {
      this.fresh = false;
      this.behind = false;
      // A store failure ends the waiting subscriptions with the error, never silently.
      for (const waiter of [...this.waiters]) waiter.reject(error);
    } finally {
      this.probing = false;
    }
    this.scheduleQuickRepoll(heldBack);
  }

  /** Waits `ms`, or less if the watcher is closed meanwhile. */
  private settle(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.endSettle = () => {
        clearTimeout(timer);
        this.endSettle = null;
        resolve();
      };
      const timer = setTimeout(this.endSettle, ms);
    });
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
