import type { Position } from '../core/event-store.port.js';
import type { SqlClient } from '../postgres/sql-client.port.js';

/** NOTIFY channel on which a projector announces `<name>` after committing a batch of that projection. */
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
 */
export class ProjectionSignals {
  private readonly listeners = new Map<string, Set<AdvanceListener>>();
  private listening: Promise<(() => Promise<void>) | null> | null = null;
  private readonly toNotify = new Set<string>();
  private notifying: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly sql: SqlClient,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** A batch of `name` committed in this process; `livePosition` when it went to the live version. */
  advanced(name: string, livePosition: Position | null): void {
    this.emit(name, livePosition);
    if (this.closed) return;
    // A burst of batches costs a few NOTIFYs: names queued meanwhile go out with the next round.
    this.toNotify.add(name);
    this.notifying ??= this.sendNotifications();
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

  async close(): Promise<void> {
    this.closed = true;
    await this.notifying;
    const unlisten = await this.listening;
    this.listening = null;
    await unlisten?.().catch(() => undefined);
  }

  private listen(): void {
    if (this.listening !== null || this.closed) return;
    this.listening = this.sql
      .listen(PROJECTIONS_CHANNEL, (payload) => {
        // '' follows a reconnect: anything may have been missed.
        if (payload === '') for (const name of this.listeners.keys()) this.emit(name, null);
        else this.emit(payload, null);
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

  private async sendNotifications(): Promise<void> {
    while (this.toNotify.size > 0) {
      const names = [...this.toNotify];
      this.toNotify.clear();
      for (const name of names) {
        try {
          await this.sql.notify(PROJECTIONS_CHANNEL, name);
        } catch (error) {
          this.onError(error);
        }
      }
    }
    this.notifying = null;
  }
}
