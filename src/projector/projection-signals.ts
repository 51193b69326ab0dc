import type { Position } from '../core/event-store.port.js';
import type { SqlClient } from '../postgres/sql-client.port.js';
import { WakeNotifier } from '../postgres/wake-notifier.js';

/**
 * NOTIFY channel on which a projector announces, after committing batches, the names of the
 * projections that advanced: a JSON array of names (a bare name is accepted too).
 */
export const PROJECTIONS_CHANNEL = 'flostra_projections';

/**
 * Called when a projection may have advanced. `livePosition` is the live checkpoint when this
 * process committed it; null when the news came from elsewhere (re-read the checkpoint).
 */
export type AdvanceListener = (livePosition: Position | null) => void;

/**
 * Wake-ups for readers of read models: an in-process call after each committed batch, plus a
 * NOTIFY so readers in other processes hear it too. Hints only — a lost one costs a reader
 * its fallback poll, never data.
 *
 * The NOTIFYs are coalesced (WakeNotifier): one names every projection that advanced since the
 * last, and they go out at most every few milliseconds, however many batches commit.
 */
export class ProjectionSignals {
  private readonly listeners = new Map<string, Set<AdvanceListener>>();
  private readonly hurryListeners = new Map<string, Set<() => void>>();
  private listening: Promise<(() => Promise<void>) | null> | null = null;
  private readonly toNotify = new Set<string>();
  private readonly notifier: WakeNotifier;
  private closed = false;

  constructor(
    private readonly sql: SqlClient,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {
    this.notifier = new WakeNotifier(() => {
      const names = [...this.toNotify];
      this.toNotify.clear();
      return names.length === 0 ? Promise.resolve() : this.sql.notify(PROJECTIONS_CHANNEL, JSON.stringify(names));
    }, onError);
  }

  /** A batch of `name` committed in this process; `livePosition` when it went to the live version. */
  advanced(name: string, livePosition: Position | null): void {
    this.emit(name, livePosition);
    if (this.closed) return;
    this.toNotify.add(name);
    this.notifier.request();
  }

  on(name: string, listener: AdvanceListener): () => void {
    let set = this.listeners.get(name);
    if (set === undefined) this.listeners.set(name, (set = new Set()));
    set.add(listener);
    this.listen();
    return () => {
      set.delete(listener);
    };
  }

  /**
   * A reader in this process waits for `name` to advance: its runner here, if it is holding a
   * short batch back for more to join it, commits that batch now. Readers in other processes
   * wait out the window (the projector's `gatherMs`).
   */
  hurry(name: string): void {
    for (const listener of [...(this.hurryListeners.get(name) ?? [])]) listener();
  }

  /** Called on each `hurry(name)`; returns the unsubscribe. */
  onHurry(name: string, listener: () => void): () => void {
    let set = this.hurryListeners.get(name);
    if (set === undefined) this.hurryListeners.set(name, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.notifier.flush();
    const unlisten = await this.listening;
    this.listening = null;
    await unlisten?.().catch(() => undefined);
  }

  private listen(): void {
    if (this.listening !== null || this.closed) return;
    this.listening = this.sql
      .listen(PROJECTIONS_CHANNEL, (payload) => {
        // '' follows a reconnect: anything may have been missed.
        for (const name of advancedNames(payload) ?? this.listeners.keys()) this.emit(name, null);
      })
      .catch((error: unknown) => {
        this.onError(error);
        this.listening = null; // the next listener tries again; meanwhile readers poll
        return null;
      });
  }

  private emit(name: string, livePosition: Position | null): void {
    for (const listener of [...(this.listeners.get(name) ?? [])]) {
      try {
        listener(livePosition);
      } catch (error) {
        this.onError(error);
      }
    }
  }
}

/** The names a NOTIFY payload announces; null for '' (sent after a reconnect: anything may have advanced). */
export function advancedNames(payload: string): string[] | null {
  if (payload === '') return null;
  if (!payload.startsWith('[')) return [payload];
  try {
    const names: unknown = JSON.parse(payload);
    return Array.isArray(names) ? names.filter((name): name is string => typeof name === 'string') : null;
  } catch {
    return null;
  }
}
