import type { Position } from '../core/event-store.port.js';
import type { SqlClient } from '../postgres/sql-client.port.js';
import { WakeNotifier } from '../postgres/wake-notifier.js';

/**
 * NOTIFY channel on which a projector announces, after committing batches, the names of the
 * projections that advanced: a JSON array of names (a bare name is accepted too).
 */
export const PROJECTIONS_CHANNEL = 'flostra_projections';

/**
 * NOTIFY channel on which a reader with no live runner of a projection in its process asks the
 * projector that has one to commit the batch it is holding back: a JSON array of names.
 */
export const HURRY_CHANNEL = 'flostra_projections_hurry';

/** A runner's answer to a hurry: true when it is the live runner (and let its batch go). */
export type HurryListener = () => boolean;

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
  private readonly hurryListeners = new Map<string, Set<HurryListener>>();
  private listening: Promise<(() => Promise<void>) | null> | null = null;
  private hurryListening: Promise<(() => Promise<void>) | null> | null = null;
  private readonly toNotify = new Set<string>();
  private readonly toHurry = new Set<string>();
  private readonly notifier: WakeNotifier;
  private readonly hurryNotifier: WakeNotifier;
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
    this.hurryNotifier = new WakeNotifier(() => {
      const names = [...this.toHurry];
      this.toHurry.clear();
      return names.length === 0 ? Promise.resolve() : this.sql.notify(HURRY_CHANNEL, JSON.stringify(names));
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
   * A reader waits for `name` to advance: the live runner holding a short batch back for more to
   * join it commits that batch now. A live runner in this process hears it directly; otherwise
   * the request goes by NOTIFY to the projector that has one (coalesced, like the wake-ups).
   */
  hurry(name: string): void {
    let handled = false;
    for (const listener of [...(this.hurryListeners.get(name) ?? [])]) handled = listener() || handled;
    if (handled || this.closed) return;
    this.toHurry.add(name);
    this.hurryNotifier.request();
  }

  /**
   * Called on each hurry of `name`, from this process or another; returns the unsubscribe. The
   * first call makes this process listen for hurries sent by others.
   */
  onHurry(name: string, listener: HurryListener): () => void {
    let set = this.hurryListeners.get(name);
    if (set === undefined) this.hurryListeners.set(name, (set = new Set()));
    set.add(listener);
    this.listenForHurries();
    return () => {
      set.delete(listener);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.notifier.flush(), this.hurryNotifier.flush()]);
    const unlisten = await Promise.all([this.listening, this.hurryListening]);
    this.listening = this.hurryListening = null;
    await Promise.all(unlisten.map((stop) => stop?.().catch(() => undefined)));
  }

  private listenForHurries(): void {
    if (this.hurryListening !== null || this.closed) return;
    this.hurryListening = this.sql
      .listen(HURRY_CHANNEL, (payload) => {
        for (const name of advancedNames(payload) ?? []) {
          for (const listener of [...(this.hurryListeners.get(name) ?? [])]) listener();
        }
      })
      .catch((error: unknown) => {
        this.onError(error);
        this.hurryListening = null; // the next runner tries again; meanwhile readers wait out the window
        return null;
      });
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
