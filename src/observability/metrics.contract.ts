import { defineRoute, PUBLIC, text } from '../http/openapi/route-contract.js';

/** Contract of MetricsController (docs/operations.md, "Metrics"). */

/** The Prometheus text exposition format, version 0.0.4. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export const metricsContract = defineRoute({
  operationId: 'metrics',
  summary: 'Prometheus metrics',
  description:
    'The `flostra_*` series of the roles this process runs, and its process metrics, in the Prometheus text format. ' +
    'Served here unless `FLOSTRA_METRICS_PORT` moves it to a listener of its own.',
  tags: ['Health'],
  access: PUBLIC,
  responses: { 200: text('The exposition.', METRICS_CONTENT_TYPE) },
  errors: [],
});
