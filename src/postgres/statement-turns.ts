import { onUrgentWorkDone, urgentWorkUnderWay } from './urgent-work.js';

export interface StatementTurnsOptions {
  /**
   * Longest a statement that is not urgent is held back behind urgent work: once it has waited
   * this long it goes next, before any urgent one, so nothing starves.
   */
  maxHoldMs: number;
  /** Milliseconds and a timer; injectable so that tests move time by hand. */
  time?: { now(): number; schedule(run: () => void, ms: number): () => void };
  /** Whether urgent work is under way (default: `urgentWorkUnderWay`), and how to learn that it ended. */
  urgentWork?: { underWay(): boolean; onDone(listener: () => void): () => void };
}

interface Turn {
  queuedAtMs: number;
  start(): void;
}

const realTime = {
  now: () => performance.now(),
  schedule: (run: () => void, ms: number) => {
    const timer = setTimeout(run, ms);
    return () => clearTimeout(timer);
  },
};

/**
 * The turns of a database that runs one statement (or transaction) at a time, with two lanes:
 * urgent work (see urgent-work.ts) goes first, and while any is under way the other statements
 * wait, even in the gaps between its statements (the process's one thread is busy with that
 * work then anyway), but never longer than `maxHoldMs`: a statement that has waited that long
 * goes before any urgent one. Without urgent work it is one queue in arrival order.
 */
export class StatementTurns {
  private readonly urgent: Turn[] = [];
  private readonly normal: Turn[] = [];
  private busy = false;
  private cancelHold: (() => void) | null = null;
  private readonly time: NonNullable<StatementTurnsOptions['time']>;
  private readonly underWay: () => boolean;
  private readonly stopListening: () => void;

  constructor(private readonly options: StatementTurnsOptions) {
    this.time = options.time ?? realTime;
    const urgentWork = options.urgentWork ?? { underWay: urgentWorkUnderWay, onDone: onUrgentWorkDone };
    this.underWay = urgentWork.underWay;
    this.stopListening = urgentWork.onDone(() => this.next());
  }

  /** Runs `work` in its turn: alone on the database, after those ahead of it. */
  run<T>(urgent: boolean, work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const turn: Turn = {
        queuedAtMs: this.time.now(),
        start: () =>
          void new Promise<T>((started) => started(work())).then(resolve, reject).finally(() => {
            this.busy = false;
            this.next();
          }),
      };
      (urgent ? this.urgent : this.normal).push(turn);
      this.next();
    });
  }

  /** Stops following urgent work; turns already queued still run. */
  close(): void {
    this.stopListening();
    this.cancelHold?.();
    this.cancelHold = null;
  }

  private next(): void {
    if (this.busy) return;
    const turn = this.pick();
    if (turn === undefined) return;
    this.cancelHold?.();
    this.cancelHold = null;
    this.busy = true;
    turn.start();
  }

  private pick(): Turn | undefined {
    const oldest = this.normal[0];
    const heldMs = oldest === undefined ? 0 : this.time.now() - oldest.queuedAtMs;
    if (oldest !== undefined && heldMs >= this.options.maxHoldMs) return this.normal.shift();
    if (this.urgent.length > 0) return this.urgent.shift();
    if (oldest === undefined || !this.underWay()) return this.normal.shift();
    // Held back: looked at again when the urgent work ends or the hold runs out.
    this.cancelHold ??= this.time.schedule(() => {
      this.cancelHold = null;
      this.next();
    }, this.options.maxHoldMs - heldMs);
    return undefined;
  }
}
