import type { Position, RecordedEvent } from '../src/core/event-store.port.js';
import { executionStreamId, parseExecutionEvent } from '../src/executions/domain/execution-event.parser.js';
import { EXECUTION_EVENT_TYPES, type ExecutionEvent } from '../src/executions/domain/execution.events.js';
import type { BatchMemo, EventHandlers, ProjectionSource } from '../src/projector/projection-definition.js';

/**
 * An execution event as the read models receive it: the payload validated by the executions
 * event parser (zod at the edge), plus where it sits in the log.
 */
export type ProjectedEvent<E extends ExecutionEvent = ExecutionEvent> = E & {
  position: Position;
  eventId: string;
  executionId: string;
  /** Revision of the event in its execution stream. */
  revision: number;
  recordedAt: string;
  metadata: Record<string, unknown>;
};

const EXECUTION_PREFIX = executionStreamId('');

/** Projected events by recorded event: the runners of every projection share the tail's objects. */
const projected = new WeakMap<RecordedEvent, ProjectedEvent>();

/**
 * Validates an execution event read back from the log and adds its place in the log; once per
 * recorded event, whichever runner asks first (handlers never modify events).
 */
export function toProjectedEvent(recorded: RecordedEvent): ProjectedEvent {
  const known = projected.get(recorded);
  if (known !== undefined) return known;
  const event = parseExecutionEvent(recorded);
  // Named fields, not a spread of the event: one object shape for every event type.
  const result = {
    type: event.type,
    data: event.data,
    position: recorded.position,
    eventId: recorded.id,
    executionId: recorded.streamId.slice(EXECUTION_PREFIX.length),
    revision: recorded.revision,
    recordedAt: recorded.recordedAt,
    metadata: recorded.metadata,
  } as ProjectedEvent;
  projected.set(recorded, result);
  return result;
}

/** The events of every execution stream (`execution-<id>`). */
export const executionEvents: ProjectionSource<ProjectedEvent> = {
  decode: (recorded) => (recorded.streamId.startsWith(EXECUTION_PREFIX) ? toProjectedEvent(recorded) : null),
};

/** The same handler for every event type (a fold, an append), still one entry per type. */
export function sameHandlerForEveryType<Batch>(
  handler: (batch: Batch, event: ProjectedEvent) => void,
): EventHandlers<Batch, ProjectedEvent> {
  return Object.fromEntries(EXECUTION_EVENT_TYPES.map((type) => [type, handler])) as unknown as EventHandlers<Batch, ProjectedEvent>;
}

/**
 * The executions a batch touches that started before it (a start is its stream's first event,
 * so those started in the batch have nothing stored yet): what `memo` remembers of them, and
 * the ids it does not, for `begin` to read.
 */
export function recallEarlierExecutions<T>(
  events: readonly ProjectedEvent[],
  memo: BatchMemo<T>,
): { remembered: Map<string, T>; unknown: string[] } {
  const startedHere = new Set(events.filter((e) => e.type === 'ExecutionStarted').map((e) => e.executionId));
  const remembered = new Map<string, T>();
  const unknown: string[] = [];
  for (const id of new Set(events.map((e) => e.executionId))) {
    if (startedHere.has(id)) continue;
    const value = memo.get(id);
    if (value === undefined) unknown.push(id);
    else remembered.set(id, value);
  }
  return { remembered, unknown };
}
