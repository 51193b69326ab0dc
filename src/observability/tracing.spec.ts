import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { traceIdOf } from '../core/traceparent.js';
import { contextFrom, currentTraceHeaders, inSpan, linkTo, SpanKind, startSpan, traceHeadersOfSpan } from './tracing.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('tracing helpers without an SDK (tracing off)', () => {
  it('carry nothing and record nothing', async () => {
    expect(currentTraceHeaders()).toEqual({});
    const headers = await inSpan('work', { parent: contextFrom({ traceparent: PARENT }) }, async () => currentTraceHeaders());
    expect(headers).toEqual({});
    expect(traceHeadersOfSpan(startSpan('x'))).toEqual({});
  });
});

describe('tracing helpers with an SDK', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

  beforeAll(() => provider.register());
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('continue the trace a traceparent names, and hand on the active span in headers', async () => {
    const headers = await inSpan('consume', { kind: SpanKind.CONSUMER, parent: contextFrom({ traceparent: PARENT }) }, async () =>
      currentTraceHeaders(),
    );
    const [span] = exporter.getFinishedSpans().filter((s) => s.name === 'consume');
    expect(span.spanContext().traceId).toBe(traceIdOf(PARENT));
    expect(span.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(headers.traceparent).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  });

  it('make spans started inside a span its children, across awaits', async () => {
    exporter.reset();
    await inSpan('outer', {}, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      await inSpan('inner', {}, async () => undefined);
    });
    const spans = exporter.getFinishedSpans();
    const outer = spans.find((s) => s.name === 'outer')!;
    const inner = spans.find((s) => s.name === 'inner')!;
    expect(inner.spanContext().traceId).toBe(outer.spanContext().traceId);
    expect(inner.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
  });

  it('start a new trace when the carrier names none, and mark a span whose work failed', async () => {
    exporter.reset();
    await expect(
      inSpan('failing', { parent: contextFrom({ actor: 'alice' }) }, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const [span] = exporter.getFinishedSpans();
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.status).toMatchObject({ code: 2, message: 'boom' });
  });

  it('link to the span a carrier names; ignore a malformed one', () => {
    expect(linkTo({ traceparent: PARENT })?.context.spanId).toBe('00f067aa0ba902b7');
    expect(linkTo({ traceparent: 'garbage' })).toBeNull();
    expect(contextFrom({ traceparent: 'garbage' })).toBe(context.active());
  });

  it('hand on a started span in headers, without making it active', () => {
    const span = startSpan('dispatch', { kind: SpanKind.PRODUCER, parent: contextFrom({ traceparent: PARENT }) });
    const headers = traceHeadersOfSpan(span);
    span.end();
    expect(traceIdOf(headers.traceparent)).toBe(traceIdOf(PARENT));
    expect(currentTraceHeaders()).toEqual({});
  });
});
