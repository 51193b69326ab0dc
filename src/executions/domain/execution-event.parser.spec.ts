import { describe, expect, it } from '@jest/globals';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { EXECUTION_SCHEMA_VERSION, parseExecutionEvent, UnreadableEventError } from './execution-event.parser.js';

function recorded(type: string, data: unknown, metadata: Record<string, unknown> = {}): RecordedEvent {
  return { id: 'e1', type, streamId: 'execution-x', revision: 3, position: 'p', data, metadata, recordedAt: '2026-11-29T00:00:00.000Z' };
}

/** ExecutionStarted as schema version 1 wrote it: the key and the fingerprint side by side. */
function startedV1(idempotencyKey: string | null, requestFingerprint: string | null) {
  const graph = {
    nodes: [{ id: 'a', type: 'noop' }],
    edges: [],
    retry: { maxAttempts: 1, initialIntervalMs: 0, backoffCoefficient: 1, maxIntervalMs: 0, nonRetryable: [] },
    timeouts: { queueMs: 1, leaseMs: 1, executionMs: 1 },
  };
  return {
    executionId: 'x',
    workspaceId: 'ws-a',
    workflow: { workflowId: 'w', name: 'flow', revision: 1, digest: 'd', graph },
    input: {},
    idempotencyKey,
    requestFingerprint,
    startedBy: 'alice',
    startedAt: '2026-11-29T00:00:00.000Z',
  };
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

  describe('when the event was recorded with an older schema version', () => {
    it('reads a version 1 start with a key as the one idempotency record of version 2', () => {
      const event = parseExecutionEvent(recorded('ExecutionStarted', startedV1('key-1', 'fp-1'), { schemaVersion: 1 }));
      expect(event.type).toBe('ExecutionStarted');
      expect(event.data).toMatchObject({ idempotency: { key: 'key-1', fingerprint: 'fp-1' }, startedBy: 'alice' });
      expect(event.data).not.toHaveProperty('idempotencyKey');
      expect(event.data).not.toHaveProperty('requestFingerprint');
    });

    it('reads a version 1 start without a key as one without idempotency, also when no version was recorded', () => {
      expect(parseExecutionEvent(recorded('ExecutionStarted', startedV1(null, null), { schemaVersion: 1 })).data).toMatchObject({
        idempotency: null,
      });
      expect(parseExecutionEvent(recorded('ExecutionStarted', startedV1(null, null))).data).toMatchObject({ idempotency: null });
    });

    it('reads a suspension of versions 1 and 2, which named one approval node, as one that waits for that approval', () => {
      const at = '2026-11-29T00:00:00.000Z';
      for (const schemaVersion of [1, 2]) {
        expect(parseExecutionEvent(recorded('AttemptSuspended', { attemptId: 'a1', nodeId: 'sign-off', at }, { schemaVersion }))).toEqual({
          type: 'AttemptSuspended',
          data: { attemptId: 'a1', waits: [{ nodeId: 'sign-off', kind: 'approval' }], at },
        });
      }
    });

    it('reads the other events of version 1 unchanged', () => {
      const data = { reason: 'stop', at: '2026-11-29T00:00:00.000Z' };
      expect(parseExecutionEvent(recorded('ExecutionCancelled', data, { schemaVersion: 1 }))).toEqual({ type: 'ExecutionCancelled', data });
    });
  });

  it('refuses an event written by a newer release, saying so', () => {
    const event = recorded(
      'ExecutionCancelled',
      { reason: null, at: '2026-11-29T00:00:00.000Z' },
      { schemaVersion: EXECUTION_SCHEMA_VERSION + 1 },
    );
    expect(() => parseExecutionEvent(event)).toThrow(
      new RegExp(`unknown schemaVersion ${EXECUTION_SCHEMA_VERSION + 1} \\(written by a newer Flostra\\)`),
    );
  });
});
