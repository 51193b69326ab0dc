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

/**
 * NOTIFY channel on which a process whose live streams follow projections says so, again every
 * second while they do: a JSON array of names. A projector counts a watch heard within 3 s.
 */
export const WATCH_CHANNEL = 'flostra_projections_watch';
const WATCH_RENEW_MS = 1_000;
const WATCH_TTL_MS = 3_000;

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
 *
 * The other way, readers reach the runners: `hurry` (a query waits: commit the held batch now)
 * and `watch` (a live stream follows: hold batches back briefly), in process or by NOTIFY.
 */
export class ProjectionSignals {
  private readonly listeners = new Map<string, Set<AdvanceListener>>();
  private readonly hurryListeners = new Map<string, Set<HurryListener>>();
  private listening: Promise<(() => Promise<void>) | null> | null = null;
  private hurryListening: Promise<(() => Promise<void>) | null> | null = null;
  private watchListening: Promise<(() => Promise<void>) | null> | null = null;
  /** Live streams of this process following each projection. */
  private readonly watches = new Map<string, number>();
  /** When another process last said its live streams follow each projection (performance.now()). */
  private readonly watchedElsewhere = new Map<string, number>();
  private watchTimer: NodeJS.Timeout | null = null;
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
    this.listenForReaders();
    return () => {
      set.delete(listener);
    };
  }

  /**
   * A live stream of this process (SSE) follows `name`: while any does, in any process, the
   * runner of `name` holds batches back for its live window only (`watched`), and a batch it
   * holds back now goes at once. Returns the release.
   */
  watch(name: string): () => void {
    this.watches.set(name, (this.watches.get(name) ?? 0) + 1);
    this.hurry(name);
    this.announceWatches();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.watches.get(name) ?? 1) - 1;
      if (left > 0) this.watches.set(name, left);
      else this.watches.delete(name);
    };
  }

  /** Whether a live stream follows `name`: in this process, or in another heard from lately. */
  watched(name: string): boolean {
    if (this.watches.has(name)) return true;
    const heard = this.watchedElsewhere.get(name);
    return heard !== undefined && performance.now() - heard < WATCH_TTL_MS;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.watchTimer !== null) clearTimeout(this.watchTimer);
    await Promise.all([this.notifier.flush(), this.hurryNotifier.flush()]);
    const unlisten = await Promise.all(
      [this.listening, this.hurryListening, this.watchListening].map((listening) => listening ?? Promise.resolve(null)),
    );
    this.listening = this.hurryListening = this.watchListening = null;
    await Promise.all(unlisten.filter((stop) => stop !== null).map((stop) => stop().catch(() => undefined)));
  }

  /** Says which projections this process's live streams follow, now and every second while any does. */
  private announceWatches(): void {
    if (this.watchTimer !== null || this.closed) return;
    const announce = () => {
      this.watchTimer = null;
      if (this.watches.size === 0 || this.closed) return;
      this.sql.notify(WATCH_CHANNEL, JSON.stringify([...this.watches.keys()])).catch(this.onError);
      this.watchTimer = setTimeout(announce, WATCH_RENEW_MS);
      this.watchTimer.unref();
    };
    announce();
  }

  /** A process with runners hears the hurries and watches of readers in other processes. */
  private listenForReaders(): void {
    if (this.closed) return;
    // On failure the next runner tries again; meanwhile readers elsewhere wait out the window.
    const failed = (forget: () => void) => (error: unknown) => {
      forget();
      this.onError(error);
      return null;
    };
    this.hurryListening ??= this.sql
      .listen(HURRY_CHANNEL, (payload) => {
        for (const name of advancedNames(payload) ?? []) {
          for (const listener of [...(this.hurryListeners.get(name) ?? [])]) listener();
        }
      })
      .catch(failed(() => (this.hurryListening = null)));
    this.watchListening ??= this.sql
      .listen(WATCH_CHANNEL, (payload) => {
        const now = performance.now();
        for (const name of advancedNames(payload) ?? []) this.watchedElsewhere.set(name, now);
      })
      .catch(failed(() => (this.watchListening = null)));
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
