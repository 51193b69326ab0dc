import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Observable } from 'rxjs';
import type { Metrics } from '../core/metrics.port.js';
import { routeLabel } from '../observability/bounded-label.js';
import { contextFrom, SpanKind, SpanStatusCode, startSpan, withSpan } from '../observability/tracing.js';

type RoutedRequest = IncomingMessage & { route?: { path?: unknown } };

/** The template of the route that took the request, as Express matched it; undefined before routing or for none. */
function routeTemplateOf(request: RoutedRequest): string | undefined {
  const path = request.route?.path;
  return typeof path === 'string' ? path : undefined;
}

/**
 * Counts every answered request by method, route template and status, and times it (SSE streams,
 * which last as long as their client, are counted but not timed). Installed first, so requests
 * refused before routing count too, under the route `unmatched`.
 */
export function httpMetrics(metrics: Pick<Metrics, 'httpRequest'>) {
  return (request: RoutedRequest, response: ServerResponse, next: () => void): void => {
    const started = performance.now();
    response.once('close', () => {
      const stream = String(response.getHeader('content-type') ?? '').startsWith('text/event-stream');
      const seconds = stream ? null : (performance.now() - started) / 1000;
      metrics.httpRequest(request.method ?? 'UNKNOWN', routeLabel(routeTemplateOf(request)), response.statusCode, seconds);
    });
    next();
  };
}

/**
 * One server span per routed request, named by method and route template, continuing the trace
 * of the request's `traceparent` header (or starting one). The handler runs with it active, so
 * the events a command appends carry it in their metadata. Ends when the response is done.
 */
export class TracingInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<RoutedRequest>();
    const response = context.switchToHttp().getResponse<ServerResponse>();
    const route = routeLabel(routeTemplateOf(request));
    const parent = contextFrom(request.headers);
    const span = startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      parent,
      attributes: { 'http.request.method': request.method ?? 'UNKNOWN', 'http.route': route },
    });
    response.once('close', () => {
      span.setAttribute('http.response.status_code', response.statusCode);
      if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    return new Observable((subscriber) => withSpan(span, () => next.handle().subscribe(subscriber), parent));
  }
}
