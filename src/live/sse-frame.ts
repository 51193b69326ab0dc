import type { Position } from '../core/event-store.port.js';
import type { TimelineEvent } from '../core/timeline.port.js';

/** One event as an SSE client receives it, with its frame serialized once for every client. */
export interface LiveEvent {
  readonly position: Position;
  readonly executionId: string;
  readonly workspaceId: string;
  /**
   * `id:`, `event:` and `data:` lines and the blank line that dispatches them, encoded once:
   * a fan-out to a thousand clients writes the same bytes a thousand times.
   */
  readonly frame: Buffer;
}

/** The `data:` of an event: the event as /history shows it, plus where it belongs. */
export function toLiveEventData(e: TimelineEvent) {
  return {
    eventId: e.eventId,
    type: e.type,
    position: e.position,
    revision: e.revision,
    recordedAt: e.recordedAt,
    data: e.data,
    executionId: e.executionId,
    workspaceId: e.workspaceId,
  };
}

// An SSE field ends at CR or LF: a stray one in a type would forge fields or split the event.
const LINE_BREAKS = /[\r\n]/g;

export function toLiveEvent(e: TimelineEvent): LiveEvent {
  // JSON.stringify escapes CR and LF inside strings, so `data:` stays one line.
  const frame = `id: ${e.position.replace(LINE_BREAKS, '')}\nevent: ${e.type.replace(LINE_BREAKS, '')}\ndata: ${JSON.stringify(toLiveEventData(e))}\n\n`;
  return { position: e.position, executionId: e.executionId, workspaceId: e.workspaceId, frame: Buffer.from(frame, 'utf8') };
}

/** The first bytes of every stream: the reconnection delay and a comment that flushes headers. */
export function preambleFrame(retryMs: number): string {
  return `retry: ${retryMs}\n: flostra live events\n\n`;
}

export const HEARTBEAT_FRAME = ':\n\n';

export function commentFrame(text: string): string {
  return `: ${text.replace(LINE_BREAKS, ' ')}\n\n`;
}
