import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { METRICS } from '../../src/core/metrics.port.js';
import { createLogger } from '../../src/core/logger.js';
import { serveMetrics } from '../../src/observability/metrics-exposition.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** Series of an exposition by their full name with labels (`name{a="b"}`), as numbers. */
function parse(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

const START_ROUTE = '/v1/workspaces/:workspaceId/workflows/:name/executions';

describe('GET /metrics on the full stack (Postgres, Kafka, every role in one process)', () => {
  let t: TestApp;
  let api: ApiClient;
  let bus: KafkaBus;

  beforeAll(async () => {
    bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'metrics-e2e', logger: createLogger({ level: 'silent' }) });
    t = await startTestApp('postgres', {}, { bus, worker: true });
    api = client(t.url);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await bus?.close();
  });

  async function scrape(): Promise<{ text: string; series: Map<string, number> }> {
    const response = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TOKENS.metrics}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await response.text();
    return { text, series: parse(text) };
  }

  it('moves the counters and histograms one execution should move, with no id in any label', async () => {
    const before = (await scrape()).series;
    const value = (series: Map<string, number>, name: string) => series.get(name) ?? 0;
    const moved = (after: Map<string, number>, name: string) => value(after, name) - value(before, name);

    const graph = {
      nodes: [
        { id: 'a', type: 'noop' },
        { id: 'b', type: 'noop' },
        { id: 'c', type: 'noop' },
      ],
      edges: [
        { from: 'a', to: 'b' },
        { from: 'b', to: 'c' },
      ],
    };
    expect((await api.put('/v1/workspaces/ws-a/workflows/measured', { token: TOKENS.adminA, body: graph })).status).toBe(201);
    const started = await api.post('/v1/workspaces/ws-a/workflows/measured/executions', { token: TOKENS.operatorA, body: {} });
    expect(started.status).toBe(201);
    const executionId = started.body.executionId as string;
    await eventually(async () => (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body.status === 'succeeded', {
      what: 'the execution to succeed',
      timeoutMs: 60_000,
    });

    // Counters of facts are counted where they are appended: the ingestor's append of the end
    // may come a moment after the read model shows it, so the scrape is retried until it shows.
    const { text, series } = await eventually(
      async () => {
        const scraped = await scrape();
        return moved(scraped.series, 'flostra_executions_ended_total{workspace="ws-a",status="succeeded"}') === 1 && scraped;
      },
      { what: 'the end to be counted' },
    );
    expect(moved(series, 'flostra_executions_started_total{workspace="ws-a"}')).toBe(1);
    expect(moved(series, 'flostra_executions_ended_total{workspace="ws-a",status="failed"}')).toBe(0);
    expect(moved(series, 'flostra_node_duration_seconds_count{node_type="noop",outcome="succeeded"}')).toBe(3);
    expect(moved(series, 'flostra_attempt_duration_seconds_count{outcome="succeeded"}')).toBe(1);
    expect(moved(series, 'flostra_attempt_queue_seconds_count')).toBe(1);
    expect(moved(series, 'flostra_dispatch_lag_seconds_count')).toBe(1);
    expect(moved(series, 'flostra_ingest_lag_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(moved(series, 'flostra_event_store_append_seconds_count{store="postgres",result="ok"}')).toBeGreaterThanOrEqual(3);
    // HTTP by route template: the start, and the worker's claim, each once.
    expect(moved(series, `flostra_http_requests_total{method="POST",route="${START_ROUTE}",status="201"}`)).toBe(1);
    expect(
      moved(
        series,
        'flostra_http_requests_total{method="POST",route="/v1/executions/:executionId/attempts/:attemptId/claim",status="200"}',
      ),
    ).toBe(1);
    expect(moved(series, `flostra_http_request_duration_seconds_count{method="POST",route="${START_ROUTE}",status_class="2xx"}`)).toBe(1);
    // Gauges read at scrape time: the read models' lag and the ingestor's consumer lag on Kafka.
    expect(series.has('flostra_projection_lag_events{read_model="executions"}')).toBe(true);
    expect(series.has('flostra_kafka_consumer_lag{group="flostra-ingestor",topic="flostra.results.v1"}')).toBe(true);
    expect(series.has('flostra_kafka_consumer_lag{group="flostra-workers",topic="flostra.dispatch.v1"}')).toBe(true);
    expect(series.get('flostra_sse_connections')).toBe(0);
    expect(series.has('process_resident_memory_bytes')).toBe(true);
    // Never an execution id, attempt id or raw path in a label.
    expect(text).not.toContain(executionId);
    expect(text).not.toContain('/v1/executions/' + executionId);
  }, 120_000);

  it('counts a request no route took under `unmatched`', async () => {
    const before = (await scrape()).series;
    expect((await api.get('/v1/no-such-route', { token: TOKENS.viewerA })).status).toBe(404);
    const { series } = await scrape();
    const name = 'flostra_http_requests_total{method="GET",route="unmatched",status="404"}';
    expect((series.get(name) ?? 0) - (before.get(name) ?? 0)).toBe(1);
  });

  it('serves the same exposition on a listener of its own (FLOSTRA_METRICS_PORT), and nothing else there', async () => {
    const server = await serveMetrics(t.app.get(METRICS), '127.0.0.1', 0);
    try {
      const response = await fetch(`${server.url}/metrics`);
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('flostra_executions_started_total{workspace="ws-a"}');
      expect((await fetch(`${server.url}/health/ready`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
