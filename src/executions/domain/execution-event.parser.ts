import { z } from 'zod';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { recordedVersion, upcast, type Upcasters } from '../../core/upcasting.js';
import { type ExecutionEvent, type ExecutionEventType, executionEventSchemas } from './execution.events.js';

/** Schema version of the execution events this code writes; older ones are upcast when read. */
export const EXECUTION_SCHEMA_VERSION = 3;

/**
 * From one schema version to the next, per event type (see core/upcasting.ts):
 * - 1 → 2: ExecutionStarted's `idempotencyKey` and `requestFingerprint` became one nullable
 *   `idempotency: { key, fingerprint }`, the shape the start command and the state use.
 * - 2 → 3: AttemptSuspended's one `nodeId` (always an approval node) became the list of what the
 *   attempt waits for, `waits: [{ nodeId, kind }]`, so tasks (and later other waits) suspend too.
 */
export const EXECUTION_UPCASTERS: Upcasters = {
  ExecutionStarted: {
    1: (data) => {
      if (typeof data !== 'object' || data === null) return data; // the schema refuses it
      const { idempotencyKey, requestFingerprint, ...rest } = data as Record<string, unknown>;
      const idempotency =
        typeof idempotencyKey === 'string' && typeof requestFingerprint === 'string'
          ? { key: idempotencyKey, fingerprint: requestFingerprint }
          : null;
      return { ...rest, idempotency };
    },
  },
  AttemptSuspended: {
    2: (data) => {
      if (typeof data !== 'object' || data === null) return data;
      const { nodeId, ...rest } = data as Record<string, unknown>;
      return typeof nodeId === 'string' ? { ...rest, waits: [{ nodeId, kind: 'approval' }] } : data;
    },
  },
};

/** Thrown when the log holds something this code cannot read: a bug or a corrupted store, never user input. */
export class UnreadableEventError extends Error {
  constructor(recorded: RecordedEvent, reason: string) {
    super(`event ${recorded.id} (${recorded.type} at ${recorded.streamId}@${recorded.revision}) is unreadable: ${reason}`);
  }
}

/**
 * Events already parsed, by the recorded event they came from. Subscribers at the head of the
 * log share the same recorded events (the store's shared tail), so the projections and the
 * watchdog validate each event once between them, not once each. Treat the result as read-only.
 */
const parsedEvents = new WeakMap<RecordedEvent, ExecutionEvent>();

export function parseExecutionEvent(recorded: RecordedEvent): ExecutionEvent {
  let event = parsedEvents.get(recorded);
  if (event === undefined) {
    event = validate(recorded);
    parsedEvents.set(recorded, event);
  }
  return event;
}

function validate(recorded: RecordedEvent): ExecutionEvent {
  const schema = Object.hasOwn(executionEventSchemas, recorded.type)
    ? (executionEventSchemas[recorded.type as ExecutionEventType] as z.ZodType)
    : undefined;
  if (!schema) throw new UnreadableEventError(recorded, 'unknown event type');
  const version = recordedVersion(recorded.metadata, EXECUTION_SCHEMA_VERSION);
  if (typeof version !== 'number') {
    const written = version.problem === 'newer' ? ' (written by a newer Flostra)' : '';
    throw new UnreadableEventError(recorded, `unknown schemaVersion ${String(version.version)}${written}`);
  }
  const parsed = schema.safeParse(upcast(EXECUTION_UPCASTERS, recorded.type, version, EXECUTION_SCHEMA_VERSION, recorded.data));
  if (!parsed.success) throw new UnreadableEventError(recorded, z.prettifyError(parsed.error));
  return { type: recorded.type, data: parsed.data } as ExecutionEvent;
}

export const executionStreamId = (executionId: string) => `execution-${executionId}`;
