import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { METRICS } from '../../src/core/metrics.port.js';
import { serveMetrics } from '../../src/observability/metrics-exposition.js';
import { client, type ApiClient } from '../support/http-client.js';
import { publish, start } from '../support/scenario.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/**
 * Promise 13 (docs/architecture.md): the metrics name workspaces, so on the API's port, which
 * every tenant reaches, they are read with a token of the global `metrics` or `system-admin` role
 * only (FLOSTRA_METRICS_AUTH=token, the default); the listener of FLOSTRA_METRICS_PORT, on a
 * network of the operator's choosing, stays open to the scraper.
 */
describe('who may read /metrics on the API port', () => {
  describe('by default (FLOSTRA_METRICS_AUTH=token)', () => {
    let app: TestApp;
    let api: ApiClient;
    beforeAll(async () => {
      app = await startTestApp('pglite');
      api = client(app.url);
      await publish(api, 'measured');
      await start(api, 'measured');
    });
    afterAll(() => app?.close());

    it('answers 401 without a token, and 403 to tokens of a workspace, a worker or a task worker', async () => {
      const anonymous = await api.get('/metrics');
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.code).toBe('unauthenticated');
      for (const token of [TOKENS.adminA, TOKENS.viewerA, TOKENS.adminB, TOKENS.worker, TOKENS.taskWorkerA]) {
        const refused = await api.get('/metrics', { token });
        expect({ token, status: refused.status, code: refused.body.code }).toEqual({ token, status: 403, code: 'forbidden' });
        expect(JSON.stringify(refused.body)).not.toContain('flostra_');
      }
    });

    it('answers the series, workspaces among their labels, to the metrics and system-admin roles', async () => {
      for (const token of [TOKENS.metrics, TOKENS.systemAdmin]) {
        const scraped = await api.get('/metrics', { token });
        expect(scraped.status).toBe(200);
        expect(String(scraped.body)).toContain('flostra_executions_started_total{workspace="ws-a"}');
      }
    });

    it('serves the listener of FLOSTRA_METRICS_PORT without a token', async () => {
      const server = await serveMetrics(app.app.get(METRICS), '127.0.0.1', 0);
      try {
        const response = await fetch(`${server.url}/metrics`);
        expect(response.status).toBe(200);
        expect(await response.text()).toContain('flostra_executions_started_total{workspace="ws-a"}');
      } finally {
        await server.close();
      }
    });
  });

  describe('with FLOSTRA_METRICS_AUTH=none', () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp('pglite', { FLOSTRA_METRICS_AUTH: 'none' });
    });
    afterAll(() => app?.close());

    it('answers anyone who reaches the port', async () => {
      const scraped = await client(app.url).get('/metrics');
      expect(scraped.status).toBe(200);
      expect(String(scraped.body)).toContain('flostra_');
    });
  });
});
