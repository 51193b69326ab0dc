import {
  context,
  propagation,
  ROOT_CONTEXT,
  type Context,
  type Link,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
} from '@opentelemetry/api';
import { traceHeadersOf, type TraceHeaders } from '../core/traceparent.js';

/**
 * Manual spans at Flostra's seams, over the OpenTelemetry API only. Without a registered SDK
 * (tracing off: OTEL_EXPORTER_OTLP_ENDPOINT unset) every call here is the API's no-op: spans
 * record nothing and nothing is injected into metadata or headers.
 */

export { SpanKind, SpanStatusCode };
export type { Context, Link, Span };

const TRACER_NAME = 'flostra';

function tracer() {
  return trace.getTracer(TRACER_NAME);
}

const NO_HEADERS: TraceHeaders = Object.freeze({});

/** The active span's context as `traceparent` (and `tracestate`): for event metadata and message headers. */
export function currentTraceHeaders(active: Context = context.active()): TraceHeaders {
  if (trace.getSpan(active) === undefined) return NO_HEADERS;
  const carrier: Record<string, string> = {};
  propagation.inject(active, carrier);
  return traceHeadersOf(carrier);
}

/** The context a `traceparent` in event metadata or message headers names (the root context when none). */
export function contextFrom(carrier: Readonly<Record<string, unknown>> | undefined): Context {
  const headers = traceHeadersOf(carrier);
  if (headers.traceparent === undefined) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers);
}

export interface SpanOptions {
  kind?: SpanKind;
  /** The parent; the active context when absent. */
  parent?: Context;
  attributes?: Attributes;
  links?: Link[];
}

/** Starts a span (not made active); end it yourself. */
export function startSpan(name: string, options: SpanOptions = {}): Span {
  return tracer().startSpan(name, { kind: options.kind, attributes: options.attributes, links: options.links }, options.parent);
}

/** Runs `work` with `span` active, so spans and trace headers made inside it descend from it. */
export function withSpan<T>(span: Span, work: () => T, parent: Context = context.active()): T {
  return context.with(trace.setSpan(parent, span), work);
}

/**
 * Runs `work` inside a new span, active for its duration: the span ends when `work` settles,
 * marked as an error when it rejects (the rejection goes on).
 */
export async function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = startSpan(name, { ...options, parent });
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Marks a span as failed with the error's message. */
export function failSpan(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** A link to the span a carrier names, for work that gathers several (one append of several results). */
export function linkTo(carrier: Readonly<Record<string, unknown>> | undefined): Link | null {
  const spanContext = trace.getSpanContext(contextFrom(carrier));
  return spanContext === undefined ? null : { context: spanContext };
}

/** The trace headers that make `span` the parent of whoever receives them. */
export function traceHeadersOfSpan(span: Span): TraceHeaders {
  return currentTraceHeaders(trace.setSpan(ROOT_CONTEXT, span));
}
