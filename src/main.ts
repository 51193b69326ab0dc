import 'reflect-metadata';
import { type AppConfig, codeShare, ConfigError, isEmbedded, loadConfig, runsRole, transformLimits } from './config/config.js';
import { KafkaBus } from './bus/kafka/kafka-bus.js';
import { createWorker } from './worker/runtime/create-worker.js';
import type { WorkerService } from './worker/runtime/worker.service.js';
import { systemClock } from './core/clock.port.js';
import { randomIds } from './core/ids.js';
import { createLogger, quietUntilStarted, type Logger } from './core/logger.js';
import { loadTokens, workerTokenOf } from './auth/tokens.loader.js';
import { createApp } from './app/create-app.js';
import { workerControlPlaneRoute } from './app/in-process-control-plane.js';
import { openInfrastructure } from './app/infrastructure.js';
import { parsePublishBody, PublishWorkflowCommand, PublishWorkflowHandler } from './workflows/application/publish-workflow.handler.js';
import { DEMO_WORKFLOW_NAME, demoWorkflow } from './app/demo-workflow.js';
import { describeStartFailure, printBanner } from './app/banner.js';
import { withEmbeddedSecretsKey } from './secrets/infrastructure/secrets-key-file.js';
import { PrometheusMetrics } from './observability/prometheus-metrics.js';
import { serveMetrics, type MetricsServer } from './observability/metrics-exposition.js';
import { storeKindOf } from './observability/measured-event-store.js';
import { startTracing } from './observability/tracing-sdk.js';

/** Known once the configuration is: a failure to write there or to listen is then told as such. */
let configForErrors: { dataDir?: string; host?: string } = {};

async function main(): Promise<void> {
  const config = loadConfig();
  configForErrors = { dataDir: config.dataDir, host: config.host };
  // Until the banner, progress records are debug: a person sees the banner first.
  const { logger, started } = quietUntilStarted(createLogger({ level: config.logLevel }));
  // SIGHUP re-reads the tokens (docs/operations.md, "Tokens file"); Node's default would end the process.
  let hangup = () => logger.info('SIGHUP: nothing to reload, this process has no tokens loaded');
  process.on('SIGHUP', () => hangup());
  // Before anything that makes spans; nothing is loaded unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
  const tracing = await startTracing(config.otlpEndpoint, logger);
  if (config.roles.length === 1 && config.roles[0] === 'worker') return runWorkerOnly(config, logger, started, tracing);
  const tokens = await loadTokens(config, logger);
  hangup = () => void tokens.reloader.reload('SIGHUP');
  if (config.tokensReload === 'watch') tokens.reloader.watch();
  const { registry, devTokens } = tokens;
  const workerToken = runsRole(config, 'worker') ? workerTokenOf(config, tokens) : null;
  // Embedded without FLOSTRA_SECRETS_KEY: the key file in the data directory (made on the first start).
  const appConfig = runsRole(config, 'api') ? await withEmbeddedSecretsKey(config) : config;
  const infra = await openInfrastructure(config, logger);
  const metrics = new PrometheusMetrics({ store: storeKindOf(infra.store), maxWorkspaces: config.metricsMaxWorkspaces });
  const app = await createApp({
    config: appConfig,
    store: infra.store,
    readModelSql: infra.readModelSql,
    bus: infra.bus,
    clock: systemClock,
    ids: randomIds,
    logger,
    registry,
    metrics,
  });

  if (isEmbedded(config) && devTokens && runsRole(config, 'api')) {
    const admin = registry.authenticate(devTokens.admin);
    if (admin === null) throw new Error('the dev admin token is not in the token registry');
    await app
      .get(PublishWorkflowHandler)
      .execute(new PublishWorkflowCommand(admin, devTokens.workspace, DEMO_WORKFLOW_NAME, parsePublishBody(demoWorkflow)));
  }
  await app.listen(config.port, config.host);
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  const metricsServer = config.metricsPort === null ? null : await serveMetrics(metrics, config.host, config.metricsPort);

  let worker: WorkerService | null = null;
  if (workerToken !== null) {
    worker = createWorker({
      ...workerControlPlaneRoute(app, config, workerToken, url),
      bus: infra.bus,
      logger,
      concurrency: config.workerConcurrency,
      egressAllow: config.egressAllow,
      transform: transformLimits(config),
      code: codeShare(config),
      metrics,
    });
    await worker.start();
  }
  // Handlers first: whoever reads the banner may stop the process at once.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { signal, graceMs: config.shutdownGraceMs });
    // Attempts finish, or are handed back once the grace has passed; then every role stops,
    // committing offsets and checkpoints and releasing its leases.
    await worker?.stop({ graceMs: config.shutdownGraceMs });
    await metricsServer?.close();
    await app.close();
    await infra.close();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT').catch(stopFailed));
  process.on('SIGTERM', () => void stop('SIGTERM').catch(stopFailed));
  printBanner({ url, devTokens, dataDir: config.dataDir, embedded: isEmbedded(config), secretsKeyFile: appConfig.secretsKeyFile });
  started();
}

/**
 * `FLOSTRA_ROLES=worker` (`npm run worker`): no store and no HTTP server of its own; the worker
 * talks to the api over HTTP and to Kafka only.
 */
async function runWorkerOnly(
  config: AppConfig,
  logger: Logger,
  started: () => void,
  tracing: { shutdown(): Promise<void> } | null,
): Promise<void> {
  if (!config.apiUrl || !config.workerToken || !config.kafkaBrokers) {
    throw new ConfigError('FLOSTRA_API_URL, FLOSTRA_WORKER_TOKEN, KAFKA_BROKERS: all required for a worker-only process', [
      'FLOSTRA_API_URL',
      'FLOSTRA_WORKER_TOKEN',
      'KAFKA_BROKERS',
    ]);
  }
  const bus = new KafkaBus({
    brokers: [...config.kafkaBrokers],
    clientId: 'flostra-worker',
    logger,
    sessionTimeoutMs: config.kafkaSessionTimeoutMs,
  });
  // Metrics only when they can be scraped: a worker-only process serves no other HTTP.
  const metrics =
    config.metricsPort === null ? undefined : new PrometheusMetrics({ store: 'none', maxWorkspaces: config.metricsMaxWorkspaces });
  const worker = createWorker({
    bus,
    apiUrl: config.apiUrl,
    token: config.workerToken,
    logger,
    concurrency: config.workerConcurrency,
    egressAllow: config.egressAllow,
    transform: transformLimits(config),
    code: codeShare(config),
    metrics,
  });
  await worker.start();
  let metricsServer: MetricsServer | null = null;
  if (metrics !== undefined && config.metricsPort !== null) metricsServer = await serveMetrics(metrics, config.host, config.metricsPort);
  const stop = async (signal: string) => {
    logger.info('stopping', { signal, graceMs: config.shutdownGraceMs });
    await worker.stop({ graceMs: config.shutdownGraceMs });
    await metricsServer?.close();
    await bus.close();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT').catch(stopFailed));
  process.once('SIGTERM', () => void stop('SIGTERM').catch(stopFailed));
  process.stdout.write(`Flostra worker ${worker.workerId} is consuming dispatches for ${config.apiUrl}\n`);
  if (metricsServer !== null) process.stdout.write(`Metrics: ${metricsServer.url}/metrics\n`);
  started();
}

/** A shutdown that throws still ends the process, with one line on what failed. */
function stopFailed(error: unknown): void {
  process.stderr.write(`flostra: could not stop cleanly: ${error instanceof Error ? error.message.split('\n', 1)[0] : String(error)}\n`);
  if (process.env.LOG_LEVEL?.trim().toLowerCase() === 'debug' && error instanceof Error && error.stack)
    process.stderr.write(`${error.stack}\n`);
  process.exit(1);
}

main().catch((error: unknown) => {
  const { lines, exitCode } = describeStartFailure(error, configForErrors);
  process.stderr.write(lines.map((line) => `flostra: ${line}\n`).join(''));
  // The stack is for whoever debugs Flostra; read from the environment, which may be what failed.
  if (process.env.LOG_LEVEL?.trim().toLowerCase() === 'debug' && error instanceof Error && error.stack)
    process.stderr.write(`${error.stack}\n`);
  process.exit(exitCode);
});
