import { describe, expect, it } from '@jest/globals';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { parseExecutionEvent, UnreadableEventError } from './execution-event.parser.js';

function recorded(type: string, data: unknown): RecordedEvent {
  return { id: 'e1', type, streamId: 'execution-x', revision: 3, position: 'p', data, metadata: {}, recordedAt: '2026-11-29T00:00:00.000Z' };
}

describe('parseExecutionEvent', () => {
  it('validates a recorded event once, however many readers ask for it', () => {
    const event = recorded('ExecutionCancelled', { reason: null, at: '2026-11-29T00:00:00.000Z' });
    const first = parseExecutionEvent(event);
    expect(first).toEqual({ type: 'ExecutionCancelled', data: { reason: null, at: '2026-11-29T00:00:00.000Z' } });
    expect(parseExecutionEvent(event)).toBe(first);
    // The same fact read again from the store is another recorded event: validated on its own.
    expect(parseExecutionEvent(recorded('ExecutionCancelled', { reason: null, at: '2026-11-29T00:00:00.000Z' }))).not.toBe(first);
  });

  it('refuses an unreadable event every time it is asked', () => {
    const event = recorded('ExecutionCancelled', { reason: 42 });
    expect(() => parseExecutionEvent(event)).toThrow(UnreadableEventError);
    expect(() => parseExecutionEvent(event)).toThrow(UnreadableEventError);
  });
});
