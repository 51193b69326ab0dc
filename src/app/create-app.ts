import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { NestLoggerAdapter } from '../core/logger.js';
import { configureHttp } from '../http/configure-http.js';
import { measureAppends, storeKindOf } from '../observability/measured-event-store.js';
import { PrometheusMetrics } from '../observability/prometheus-metrics.js';
import { AppModule, type AppDependencies } from './app.module.js';
import { serveConsole } from './console-assets.js';
import { runsRole } from '../config/config.js';

/**
 * Builds the HTTP application over already-open ports; `listen` is the caller's. Without
 * `deps.metrics` it measures into Prometheus metrics of its own; appends to the store are timed.
 */
export async function createApp(given: AppDependencies): Promise<NestExpressApplication> {
  const metrics =
    given.metrics ?? new PrometheusMetrics({ store: storeKindOf(given.store), maxWorkspaces: given.config.metricsMaxWorkspaces });
  const deps = { ...given, metrics, store: measureAppends(given.store, metrics) };
  // abortOnError: false, so that a failure to build the app is thrown to the caller (main prints
  // it as one line) instead of Nest printing it and exiting; the adapter knows not to repeat it.
  const abortOnError = false;
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(deps), {
    bodyParser: false,
    logger: new NestLoggerAdapter(deps.logger.child({ component: 'nest' }), { abortOnError }),
    abortOnError,
  });
  configureHttp(app, deps.config, deps.logger);
  if (runsRole(deps.config, 'api')) serveConsole(app);
  return app;
}
