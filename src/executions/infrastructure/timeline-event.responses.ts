import { z } from 'zod';
import { positionField, timestampField, uuidField, identifierField } from '../../http/openapi/response-fields.js';
import { EXECUTION_EVENT_TYPES, executionEventSchemas, type ExecutionEventType } from '../domain/execution.events.js';

/**
 * One execution event as `/history` and the SSE `data:` line show it (`toHistoryEvent`,
 * `toLiveEventData`): a union on `type`, each with the payload schema the store validates
 * events with when it reads them back.
 */
const commonFields = {
  eventId: uuidField,
  position: positionField,
  revision: z.number().int().min(0).meta({ description: 'The event’s revision in its execution stream, from 0.' }),
  recordedAt: timestampField,
};

/** Each payload schema, shown by its event type's name (a copy that carries the name; the checks are the same). */
const payloads = new Map<ExecutionEventType, z.ZodType>(
  EXECUTION_EVENT_TYPES.map((type) => [type, executionEventSchemas[type].meta({ id: type })]),
);

const variant = (type: ExecutionEventType, extra: z.ZodRawShape) =>
  z.strictObject({ ...commonFields, type: z.literal(type), data: payloads.get(type)!, ...extra });

function eventUnion(extra: z.ZodRawShape) {
  const [first, ...rest] = EXECUTION_EVENT_TYPES.map((type) => variant(type, extra));
  return z.discriminatedUnion('type', [first, ...rest]);
}

export const historyEventSchema = eventUnion({}).meta({ id: 'HistoryEvent', description: 'One event of an execution, in log order.' });

export const liveEventSchema = eventUnion({ executionId: uuidField, workspaceId: identifierField }).meta({
  id: 'LiveEvent',
  description: 'The `data:` of one Server-Sent Event: the event as /history shows it, plus where it belongs.',
});
