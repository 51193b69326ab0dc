import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { Logger } from '../core/logger.js';
import { PROBLEM_CONTENT_TYPE, toProblem } from './problem.js';
import { pathOf, type ShellRequest } from './http-request.js';

/**
 * The one exception filter: everything thrown by a handler, a guard, a pipe or the body reader,
 * and unknown routes, become RFC 9457 problem+json (promise 11, docs/architecture.md). Unexpected errors are logged
 * and answered with a generic 500 that reveals nothing of them.
 */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  constructor(private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    const http = host.switchToHttp();
    const request = http.getRequest<ShellRequest>();
    const response = http.getResponse<ServerResponse>();
    const { problem, unexpected } = toProblem(exception);
    const where = { method: request.method, path: pathOf(request), requestId: request.requestId };
    if (unexpected) {
      this.logger.error('unhandled error', { ...where, err: exception });
    } else if (problem.status >= 500) {
      this.logger.warn(problem.detail, { ...where, code: problem.code });
    }
    if (response.headersSent) {
      // A stream (SSE) already started: no status can be sent any more, only the end.
      response.end();
      return;
    }
    response.statusCode = problem.status;
    response.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
    response.setHeader('Cache-Control', 'no-store');
    if (problem.code === 'unauthenticated') response.setHeader('WWW-Authenticate', 'Bearer');
    if (typeof problem.retryAfterSeconds === 'number') response.setHeader('Retry-After', String(problem.retryAfterSeconds));
    response.end(JSON.stringify(problem));
  }
}
