import { z } from 'zod';
import type { OutgoingMessage } from '../core/bus.port.js';
import { uuidV5 } from '../core/ids.js';
import { traceMessageHeaders, type TraceHeaders } from '../core/traceparent.js';

/**
 * A dispatch message on `flostra.dispatch.v1` (docs/api.md, "Worker protocol"), keyed by executionId.
 * Workers validate it with this schema; `notBefore` is an extension: the attempt may not be
 * claimed earlier (the dispatcher holds back retries until then anyway).
 */
export const dispatchMessageSchema = z.object({
  messageId: z.string().min(1).max(200),
  executionId: z.string().min(1).max(200),
  attemptId: z.string().min(1).max(200),
  attemptNumber: z.number().int().min(1),
  workspaceId: z.string().min(1).max(200),
  queueDeadline: z.iso.datetime({ offset: true }),
  notBefore: z.iso.datetime({ offset: true }),
});
export type DispatchMessage = z.infer<typeof dispatchMessageSchema>;

/** The same attempt always yields the same messageId, so redelivered dispatches are recognisable. */
export const dispatchMessageId = (attemptId: string): string => uuidV5(`${attemptId}:dispatch`);

/** `headers`: the trace context of the dispatch (W3C `traceparent`), when traced. */
export function toOutgoing(message: DispatchMessage, trace?: TraceHeaders): OutgoingMessage {
  const value = JSON.stringify(message);
  return trace?.traceparent === undefined
    ? { key: message.executionId, value }
    : { key: message.executionId, value, headers: traceMessageHeaders(trace) };
}
