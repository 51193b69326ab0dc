import type { Position } from './event-store.port.js';

/**
 * The timeline read model: every execution event with its global position, as the projector
 * applied it. Queries (/history) and live progress (SSE catch-up and the per-process live feed)
 * read it through this port; the projector owns the tables behind it.
 *
 * Positions of one store compare as plain strings (fixed width): `a < b` iff a is earlier.
 */
export interface TimelineEvent {
  position: Position;
  eventId: string;
  executionId: string;
  workspaceId: string;
  type: string;
  /** Revision of the event in its execution stream. */
  revision: number;
  recordedAt: string;
  data: unknown;
}

export interface TimelineReader {
  /** One execution's events strictly after `after` (null: from its first event), in position order. */
  readExecution(executionId: string, after: Position | null, limit: number): Promise<TimelineEvent[]>;
  /** One workspace's events strictly after `after`, in position order. */
  readWorkspace(workspaceId: string, after: Position | null, limit: number): Promise<TimelineEvent[]>;
  /** Every workspace's events strictly after `after`: what a per-process live feed tails. */
  readAll(after: Position | null, limit: number): Promise<TimelineEvent[]>;
  /** The workspace that owns an execution, or null when the timeline does not know it (yet). */
  workspaceOf(executionId: string): Promise<string | null>;
  /** Position of the last event the timeline has applied (null before the first). */
  checkpoint(): Promise<Position | null>;
  /**
   * Calls `listener` (without arguments) soon after the timeline advanced — in this process or,
   * through LISTEN/NOTIFY, in another. Returns an unsubscribe function. A hint only: readers
   * must still read; a missed call costs latency (a fallback poll), never an event.
   */
  onAdvance(listener: () => void): () => void;
  /**
   * A live feed follows the timeline while the returned release is not called: the projector
   * then keeps the timeline's lag short (it batches more while nobody follows).
   */
  follow(): () => void;
}

export const TIMELINE_READER = Symbol('TimelineReader');
