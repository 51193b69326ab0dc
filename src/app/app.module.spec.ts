import { describe, expect, it } from '@jest/globals';
import { TokenRegistry } from '../auth/token-registry.js';
import { loadConfig } from '../config/config.js';
import type { AppDependencies } from './app.module.js';
import { AppModule } from './app.module.js';
import { MetricsController, TokenMetricsController } from '../observability/metrics.controller.js';

/** The module's shape only: nothing here is opened or started. */
function moduleFor(env: Record<string, string>) {
  const deps = { config: loadConfig(env), registry: new TokenRegistry([]) } as unknown as AppDependencies;
  return AppModule.register(deps);
}

describe('AppModule and GET /metrics', () => {
  it('serves /metrics on the HTTP server of PORT by default, for a token of the metrics role', () => {
    expect(moduleFor({}).controllers).toContain(TokenMetricsController);
    expect(moduleFor({}).controllers).not.toContain(MetricsController);
  });

  it('serves it without a token with FLOSTRA_METRICS_AUTH=none', () => {
    expect(moduleFor({ FLOSTRA_METRICS_AUTH: 'none' }).controllers).toContain(MetricsController);
  });

  it('leaves it to the listener of FLOSTRA_METRICS_PORT when that is set', () => {
    for (const auth of ['none', 'token']) {
      const { controllers } = moduleFor({ FLOSTRA_METRICS_PORT: '9464', FLOSTRA_METRICS_AUTH: auth });
      expect(controllers).not.toContain(MetricsController);
      expect(controllers).not.toContain(TokenMetricsController);
    }
  });
});
