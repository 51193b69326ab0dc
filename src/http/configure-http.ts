import type { NestExpressApplication } from '@nestjs/platform-express';
import type { AppConfig } from '../config/config.js';
import { createLogger, NestLoggerAdapter, type Logger } from '../core/logger.js';
import { bodyParserErrors, emptyBodyAsObject, isJsonRequest, rejectNonJsonBodies, rejectUnstorableJson } from './json-body.js';
import { ProblemFilter } from './problem.filter.js';
import { requestLogging } from './request-logging.js';

/**
 * Installs the HTTP shell on a Nest app, before `init()`/`listen()`: JSON logs (Nest's too),
 * request logging, the JSON-only body parser limited to FLOSTRA_MAX_BODY_BYTES, and the
 * problem+json filter. `x-powered-by` is off.
 *
 * Create the app with `{ bodyParser: false }` (NestFactory.create or createNestApplication):
 * this is the one body parser. (Were Nest's left on, it would only find bodies already read.)
 * Pass `logger: new NestLoggerAdapter(logger)` there too, to have bootstrap logs in JSON.
 * Authentication is not installed here: import `AuthModule.forRoot(registry)`.
 */
export function configureHttp(
  app: NestExpressApplication,
  config: Pick<AppConfig, 'maxBodyBytes' | 'logLevel'>,
  logger: Logger = createLogger({ level: config.logLevel }),
): void {
  const httpLogger = logger.child({ component: 'http' });
  app.useLogger(new NestLoggerAdapter(logger.child({ component: 'nest' })));
  app.disable('x-powered-by');
  // Order matters: Express runs these in turn, before any route.
  app.use(requestLogging(httpLogger));
  app.use(rejectNonJsonBodies);
  app.useBodyParser('json', { limit: config.maxBodyBytes, strict: true, type: isJsonRequest });
  app.use(bodyParserErrors(config.maxBodyBytes));
  app.use(rejectUnstorableJson);
  app.use(emptyBodyAsObject);
  app.useGlobalFilters(new ProblemFilter(httpLogger));
}
