import { z } from 'zod';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { type ExecutionEvent, type ExecutionEventType, executionEventSchemas } from './execution.events.js';

/** Current version of every execution event payload; older versions are upcast here. */
export const EXECUTION_SCHEMA_VERSION = 1;

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
  const version = recorded.metadata['schemaVersion'] ?? EXECUTION_SCHEMA_VERSION;
  if (version !== EXECUTION_SCHEMA_VERSION) throw new UnreadableEventError(recorded, `unknown schemaVersion ${String(version)}`);
  const parsed = schema.safeParse(recorded.data);
  if (!parsed.success) throw new UnreadableEventError(recorded, z.prettifyError(parsed.error));
  return { type: recorded.type, data: parsed.data } as ExecutionEvent;
}

export const executionStreamId = (executionId: string) => `execution-${executionId}`;
