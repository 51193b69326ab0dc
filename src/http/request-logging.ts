import type { ServerResponse } from 'node:http';
import { randomIds, type IdGenerator } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import { pathOf, type NextFunction, type ShellRequest } from './http-request.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// Probes and scrapes would drown everything else at info.
const QUIET_PATHS = /^\/(health\/|metrics$)/;

/**
 * One `request` record per response, once it is finished or the client went away: method,
 * path (never the query), status, duration, subject, and a request id echoed as X-Request-Id.
 */
export function requestLogging(logger: Logger, ids: IdGenerator = randomIds) {
  return (request: ShellRequest, response: ServerResponse, next: NextFunction): void => {
    const started = performance.now();
    const offered = request.headers['x-request-id'];
    const requestId = typeof offered === 'string' && SANE_REQUEST_ID.test(offered) ? offered : ids.uuid();
    request.requestId = requestId;
    response.setHeader('X-Request-Id', requestId);
    let logged = false;
    const log = (): void => {
      if (logged) return;
      logged = true;
      const path = pathOf(request);
      const fields = {
        requestId,
        method: request.method,
        path,
        status: response.statusCode,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        ...(request.principal !== undefined ? { subject: request.principal.subject } : {}),
        ...(response.writableFinished ? {} : { aborted: true }),
      };
      if (QUIET_PATHS.test(path)) logger.debug('request', fields);
      else logger.info('request', fields);
    };
    response.once('finish', log);
    response.once('close', log);
    next();
  };
}
