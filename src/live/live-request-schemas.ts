import { z } from 'zod';

/**
 * A resume position: the `id:` of an event, sent back as Last-Event-ID or `?lastEventId=`.
 * Positions are opaque to clients, but a cursor is still bounded and printable before use.
 */
export const positionSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'expected a position as sent in an event id');

/** Query of both SSE routes (executions' and workspaces' events). */
export const eventsQuerySchema = z.strictObject({ lastEventId: positionSchema.optional() });
