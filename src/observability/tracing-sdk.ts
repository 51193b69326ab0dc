import type { Logger } from '../core/logger.js';

export interface Tracing {
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK when an OTLP endpoint is configured: a tracer provider with the
 * W3C trace-context propagator and async-local context, whose spans go in batches to
 * `<endpoint>/v1/traces` over OTLP/HTTP (the exporter reads OTEL_EXPORTER_OTLP_* itself).
 * Without an endpoint nothing is loaded: the SDK's modules are imported only here, on demand.
 */
export async function startTracing(otlpEndpoint: string | null, logger: Logger): Promise<Tracing | null> {
  if (otlpEndpoint === null) return null;
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const serviceName = process.env.OTEL_SERVICE_NAME?.trim() || 'flostra';
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  logger.info('tracing on: spans are exported over OTLP/HTTP', { endpoint: new URL(otlpEndpoint).origin, serviceName });
  return { shutdown: () => provider.shutdown() };
}
