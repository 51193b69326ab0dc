import { describe, expect, it } from '@jest/globals';
import { PrometheusMetrics } from './prometheus-metrics.js';

/** The value of one series in an exposition, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('PrometheusMetrics', () => {
  it('counts executions by workspace, bounded: workspaces past the limit share `_other`', async () => {
    const metrics = new PrometheusMetrics({ store: 'postgres', maxWorkspaces: 2 });
    for (const ws of ['ws-a', 'ws-b', 'ws-c', 'ws-d', 'ws-a']) metrics.executionStarted(ws);
    metrics.executionEnded('ws-z', 'failed');
    const text = await metrics.scrape();
    expect(sample(text, 'flostra_executions_started_total{workspace="ws-a"}')).toBe(2);
    expect(sample(text, 'flostra_executions_started_total{workspace="ws-b"}')).toBe(1);
    expect(sample(text, 'flostra_executions_started_total{workspace="_other"}')).toBe(2);
    expect(sample(text, 'flostra_executions_ended_total{workspace="_other",status="failed"}')).toBe(1);
    expect(text).not.toContain('ws-c');
  });

  it('labels HTTP requests by route template and status, and times them by status class', async () => {
    const metrics = new PrometheusMetrics({ store: 'pglite', maxWorkspaces: 10 });
    metrics.httpRequest('GET', '/v1/executions/:executionId', 200, 0.004);
    metrics.httpRequest('GET', '/v1/executions/:executionId', 404, 0.002);
    metrics.httpRequest('GET', '/v1/executions/:executionId/events', 200, null);
    const text = await metrics.scrape();
    expect(sample(text, 'flostra_http_requests_total{method="GET",route="/v1/executions/:executionId",status="200"}')).toBe(1);
    expect(sample(text, 'flostra_http_requests_total{method="GET",route="/v1/executions/:executionId",status="404"}')).toBe(1);
    expect(
      sample(text, 'flostra_http_request_duration_seconds_count{method="GET",route="/v1/executions/:executionId",status_class="4xx"}'),
    ).toBe(1);
    // A stream is counted, not timed.
    expect(sample(text, 'flostra_http_requests_total{method="GET",route="/v1/executions/:executionId/events",status="200"}')).toBe(1);
    expect(text).not.toContain('route="/v1/executions/:executionId/events",status_class');
  });

  it('observes durations in histograms, negative or broken values as 0', async () => {
    const metrics = new PrometheusMetrics({ store: 'postgres', maxWorkspaces: 10 });
    metrics.nodeRan('noop', 'succeeded', 0.003);
    metrics.nodeRan('noop', 'succeeded', -1);
    metrics.nodeRan('http', 'failed', Number.NaN);
    metrics.eventStoreAppend(0.002, false);
    metrics.eventStoreAppend(0.5, true);
    const text = await metrics.scrape();
    expect(sample(text, 'flostra_node_duration_seconds_count{node_type="noop",outcome="succeeded"}')).toBe(2);
    expect(sample(text, 'flostra_node_duration_seconds_sum{node_type="noop",outcome="succeeded"}')).toBeCloseTo(0.003);
    expect(sample(text, 'flostra_node_duration_seconds_sum{node_type="http",outcome="failed"}')).toBe(0);
    expect(sample(text, 'flostra_event_store_append_seconds_count{store="postgres",result="ok"}')).toBe(1);
    expect(sample(text, 'flostra_event_store_append_seconds_count{store="postgres",result="error"}')).toBe(1);
  });

  it('reads gauges from their sources at scrape time, and leaves out a source that fails', async () => {
    const metrics = new PrometheusMetrics({ store: 'postgres', maxWorkspaces: 10 });
    let open = 3;
    const stop = metrics.sseConnections(() => open);
    metrics.projectionLag(async () => [{ readModel: 'executions', events: 7, seconds: 1.5 }]);
    metrics.consumerLag(async () => {
      throw new Error('broker down');
    });
    let text = await metrics.scrape();
    expect(sample(text, 'flostra_sse_connections')).toBe(3);
    expect(sample(text, 'flostra_projection_lag_events{read_model="executions"}')).toBe(7);
    expect(sample(text, 'flostra_projection_lag_seconds{read_model="executions"}')).toBe(1.5);
    expect(text).not.toContain('flostra_kafka_consumer_lag{');
    open = 1;
    text = await metrics.scrape();
    expect(sample(text, 'flostra_sse_connections')).toBe(1);
    stop();
    expect(sample(await metrics.scrape(), 'flostra_sse_connections')).toBe(0);
  });

  it('leaves out a source that does not answer in time', async () => {
    const metrics = new PrometheusMetrics({ store: 'postgres', maxWorkspaces: 10, sourceTimeoutMs: 20 });
    metrics.consumerLag(() => new Promise(() => undefined));
    expect(await metrics.scrape()).not.toContain('flostra_kafka_consumer_lag{');
  });

  it('keeps the series of two instances apart, and adds the process metrics to each', async () => {
    const one = new PrometheusMetrics({ store: 'postgres', maxWorkspaces: 10 });
    const two = new PrometheusMetrics({ store: 'postgres', maxWorkspaces: 10 });
    one.executionStarted('ws-a');
    const [a, b] = [await one.scrape(), await two.scrape()];
    expect(sample(a, 'flostra_executions_started_total{workspace="ws-a"}')).toBe(1);
    expect(sample(b, 'flostra_executions_started_total{workspace="ws-a"}')).toBeUndefined();
    for (const text of [a, b]) expect(text).toContain('process_cpu_user_seconds_total');
  });
});
