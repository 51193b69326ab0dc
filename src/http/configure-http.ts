import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import { authenticateOnArrival } from '../auth/authenticate-on-arrival.js';
import { authenticateSession, isSignIn } from '../auth/session-auth.js';
import { SESSION_STORE, type SessionStore } from '../auth/session-store.js';
import { TOKEN_REGISTRY, type TokenRegistry } from '../auth/token-registry.js';
import type { AppConfig } from '../config/config.js';
import { createLogger, NestLoggerAdapter, type Logger } from '../core/logger.js';
import { METRICS, type Metrics } from '../core/metrics.port.js';
import { httpMetrics, TracingInterceptor } from './http-observability.js';
import { emptyBodyAsObject, readJsonBody, rejectUnstorableJson } from './json-body.js';
import { ProblemFilter } from './problem.filter.js';
import { gateRequests } from './request-gate.js';
import { requestLogging } from './request-logging.js';

export type HttpShellConfig = Pick<
  AppConfig,
  | 'maxBodyBytes'
  | 'logLevel'
  | 'httpHeadersTimeoutMs'
  | 'httpBodyTimeoutMs'
  | 'httpRequestTimeoutMs'
  | 'httpMaxInFlightPerToken'
  | 'httpMaxQueuedPerToken'
  | 'httpContentionWindowMs'
>;

/**
 * Installs the HTTP shell on a Nest app, before `init()`/`listen()`: JSON logs (Nest's too),
 * request metrics and spans, request logging, authentication on arrival (bearer token, then browser session), each token's fair share of request handling, the JSON-only body reader limited to
 * FLOSTRA_MAX_BODY_BYTES and FLOSTRA_HTTP_BODY_TIMEOUT_MS, the server's header and request
 * timeouts, and the problem+json filter. `x-powered-by` is off.
 *
 * Create the app with `{ bodyParser: false }` (NestFactory.create or createNestApplication):
 * this is the one body reader. Pass `logger: new NestLoggerAdapter(logger)` there too, to have
 * bootstrap logs in JSON. Import `AuthModule.forRoot(registry)` into the app first: its
 * registry authenticates requests before their bodies are read, and its guard answers 401.
 */
export function configureHttp(
  app: NestExpressApplication,
  config: HttpShellConfig,
  logger: Logger = createLogger({ level: config.logLevel }),
): void {
  const httpLogger = logger.child({ component: 'http' });
  app.useLogger(new NestLoggerAdapter(logger.child({ component: 'nest' })));
  app.disable('x-powered-by');
  limitSlowRequests(app.getHttpServer(), config);
  const registry = tokenRegistryOf(app);
  const metrics = metricsOf(app);
  // Order matters: Express runs these in turn, before any route.
  if (metrics !== null) app.use(httpMetrics(metrics));
  app.use(requestLogging(httpLogger));
  if (registry !== null) app.use(authenticateOnArrival(registry));
  const sessions = providerOf<SessionStore>(app, SESSION_STORE);
  if (sessions !== null) app.use(authenticateSession(sessions));
  // Before the body is read: a request that waits its turn costs only its socket.
  app.use(
    gateRequests({
      inFlight: config.httpMaxInFlightPerToken,
      queued: config.httpMaxQueuedPerToken,
      contentionWindowMs: config.httpContentionWindowMs,
    }),
  );
  app.use(
    readJsonBody({
      limitBytes: config.maxBodyBytes,
      timeoutMs: config.httpBodyTimeoutMs,
      authenticatedOnly: registry !== null,
      readsUnauthenticated: isSignIn,
    }),
  );
  app.use(rejectUnstorableJson);
  app.use(emptyBodyAsObject);
  app.useGlobalFilters(new ProblemFilter(httpLogger));
  app.useGlobalInterceptors(new TracingInterceptor());
}

/**
 * Node's own limits on slow requests: the headers within `headersTimeout`, the whole request
 * within `requestTimeout` (408 and the connection closed). Both end once the request has arrived,
 * so a long response (an SSE stream) is never cut. Expired requests are looked for every quarter
 * of the shorter limit instead of every 30 s. `Expect: 100-continue` is left to the body reader,
 * which refuses what it can before the client sends the body.
 */
function limitSlowRequests(server: Server, config: HttpShellConfig): void {
  server.headersTimeout = config.httpHeadersTimeoutMs;
  server.requestTimeout = config.httpRequestTimeoutMs;
  // Read when the server starts listening; missing from @types/node 20.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
    30_000,
    Math.max(50, Math.floor(Math.min(config.httpHeadersTimeoutMs, config.httpRequestTimeoutMs) / 4)),
  );
  server.on('checkContinue', (request, response) => server.emit('request', request, response));
}

/** The app's metrics, or null for an app built without them (it counts no request). */
function metricsOf(app: NestExpressApplication): Metrics | null {
  try {
    return app.get<Metrics>(METRICS, { strict: false });
  } catch {
    return null;
  }
}

/** The app's TokenRegistry, or null for an app without AuthModule (it authenticates nothing). */
function tokenRegistryOf(app: NestExpressApplication): TokenRegistry | null {
  return providerOf<TokenRegistry>(app, TOKEN_REGISTRY);
}

function providerOf<T>(app: NestExpressApplication, token: symbol): T | null {
  try {
    return app.get<T>(token, { strict: false });
  } catch {
    return null;
  }
}
