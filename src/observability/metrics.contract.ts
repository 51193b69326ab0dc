import { defineRoute, globalRole, PUBLIC, text } from '../http/openapi/route-contract.js';

/** Contract of MetricsController (docs/operations.md, "Metrics"). */

/** The Prometheus text exposition format, version 0.0.4. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export const metricsContract = defineRoute({
  operationId: 'metrics',
  summary: 'Prometheus metrics',
  description:
    'The `flostra_*` series of the roles this process runs, and its process metrics, in the Prometheus text format. ' +
    'Served here unless `FLOSTRA_METRICS_PORT` moves it to a listener of its own. ' +
    'With `FLOSTRA_METRICS_AUTH=none`, without a token: the series name workspaces.',
  tags: ['Health'],
  access: PUBLIC,
  responses: { 200: text('The exposition.', METRICS_CONTENT_TYPE) },
  errors: [],
});

/** The same exposition with `FLOSTRA_METRICS_AUTH=token` (the default). */
export const tokenMetricsContract = defineRoute({
  ...metricsContract,
  description:
    'The `flostra_*` series of the roles this process runs, and its process metrics, in the Prometheus text format. ' +
    'With `FLOSTRA_METRICS_AUTH=token` (the default) for a token with the global `metrics` or `system-admin` role only: ' +
    'the series name workspaces. Served here unless `FLOSTRA_METRICS_PORT` moves it to a listener of its own, where it needs no token.',
  access: globalRole('metrics'),
  errors: ['forbidden'],
});
