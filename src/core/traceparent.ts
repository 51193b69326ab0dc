/**
 * The W3C trace context as Flostra carries it between processes: `traceparent` (and
 * `tracestate`) in the metadata of the events a traced command appends, and in the headers of
 * bus messages. Parsing it needs no tracing library, so read models can show the trace id.
 */
export interface TraceHeaders {
  traceparent?: string;
  tracestate?: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The trace id of a `traceparent` value, or null when it is absent or malformed (or all zeros, which W3C forbids). */
export function traceIdOf(traceparent: unknown): string | null {
  if (typeof traceparent !== 'string') return null;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (match === null || match[1] === 'ff') return null;
  const [, , traceId, spanId] = match;
  return /^0+$/.test(traceId) || /^0+$/.test(spanId) ? null : traceId;
}

/** The trace context fields of event metadata or message headers, if any: only strings pass. */
export function traceHeadersOf(carrier: Readonly<Record<string, unknown>> | undefined): TraceHeaders {
  const traceparent = carrier?.['traceparent'];
  if (typeof traceparent !== 'string') return {};
  const tracestate = carrier?.['tracestate'];
  return typeof tracestate === 'string' ? { traceparent, tracestate } : { traceparent };
}

/** Trace headers as bus message headers: only those that are set. */
export function traceMessageHeaders(trace: TraceHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  if (trace.traceparent !== undefined) headers['traceparent'] = trace.traceparent;
  if (trace.tracestate !== undefined) headers['tracestate'] = trace.tracestate;
  return headers;
}
