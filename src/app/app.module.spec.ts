import { describe, expect, it } from '@jest/globals';
import { TokenRegistry } from '../auth/token-registry.js';
import { loadConfig } from '../config/config.js';
import type { AppDependencies } from './app.module.js';
import { AppModule } from './app.module.js';
import { MetricsController } from '../observability/metrics.controller.js';

/** The module's shape only: nothing here is opened or started. */
function moduleFor(env: Record<string, string>) {
  const deps = { config: loadConfig(env), registry: new TokenRegistry([]) } as unknown as AppDependencies;
  return AppModule.register(deps);
}

describe('AppModule and GET /metrics', () => {
  it('serves /metrics on the HTTP server of PORT by default', () => {
    expect(moduleFor({}).controllers).toContain(MetricsController);
  });

  it('leaves it to the listener of FLOSTRA_METRICS_PORT when that is set', () => {
    expect(moduleFor({ FLOSTRA_METRICS_PORT: '9464' }).controllers).not.toContain(MetricsController);
  });
});
