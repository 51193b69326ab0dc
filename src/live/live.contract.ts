import { z } from 'zod';
import { liveEventSchema } from '../executions/infrastructure/timeline-event.responses.js';
import { defineRoute, eventStream, workspaceRole } from '../http/openapi/route-contract.js';
import { nameSchema, uuidSchema } from '../http/validation.js';
import { eventsQuerySchema, positionSchema } from './live-request-schemas.js';

/** Contracts of LiveController (docs/api.md, "Live events (SSE)"). */

const TAGS = ['Live events'];
const resumeHeaders = z.object({ 'Last-Event-ID': positionSchema.optional() });

const STREAM =
  'Each message is `id: <position>`, `event: <event type>`, `data: <LiveEvent JSON>`. The stream opens with `retry: <ms>` and a comment, and a `:` comment ' +
  'keeps it alive. A client that cannot keep up is disconnected and resumes; events are never skipped. A revoked grant ends the stream.';
const RESUME =
  'Resume with the Last-Event-ID header (it wins) or `?lastEventId=` (for a first connection): everything after that position, exactly once, in order, then live. ' +
  'A cursor that is not a position of this event store is 400 `validation_failed`; one beyond the end of the log, 409 `position_ahead`; ' +
  'one older than the retention horizon, where events after it may have been deleted, 410 `resume_expired`. ' +
  'Open streams are limited per token and per process: one more is 429 `too_many_streams` with Retry-After.';

export const executionEventsContract = defineRoute({
  operationId: 'streamExecutionEvents',
  summary: 'Follow an execution’s events live',
  description: `${RESUME} Without either, the stream starts at the execution’s first event.`,
  tags: TAGS,
  access: workspaceRole('viewer', 'resource'),
  params: z.object({ executionId: uuidSchema }),
  query: eventsQuerySchema,
  headers: resumeHeaders,
  responses: { 200: eventStream(STREAM, liveEventSchema) },
  errors: ['validation_failed', 'not_found', 'position_ahead', 'resume_expired', 'too_many_streams', 'unavailable'],
});

export const workspaceEventsContract = defineRoute({
  operationId: 'streamWorkspaceEvents',
  summary: 'Follow every execution event of a workspace live',
  description: `${RESUME} Without either, the stream starts with the next event appended.`,
  tags: TAGS,
  access: workspaceRole('viewer', 'path'),
  params: z.object({ workspaceId: nameSchema }),
  query: eventsQuerySchema,
  headers: resumeHeaders,
  responses: { 200: eventStream(STREAM, liveEventSchema) },
  errors: ['validation_failed', 'not_found', 'position_ahead', 'resume_expired', 'too_many_streams', 'unavailable'],
});
