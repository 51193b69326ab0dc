import type { CallHandler, ExecutionContext, INestApplication, NestInterceptor } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { catchError, map, type Observable, of, throwError } from 'rxjs';
import type { z } from 'zod';
import type { Logger } from '../../core/logger.js';
import { type ShellRequest, pathOf } from '../http-request.js';
import { PROBLEM_CONTENT_TYPE, problem, toProblem, type Problem } from '../problem.js';
import { toValidationIssues } from '../validation.js';
import { answerableCodes, contractOf, type RouteContract } from './route-contract.js';

/** A response that broke its route's contract. */
export interface ResponseViolation {
  route: string;
  status: number;
  detail: string;
  issues: { path: string; message: string }[];
}

/**
 * Checks every response against its route's contract: the status must be declared, a JSON body
 * must match the schema of its status (as serialized, so exactly what the client gets), a
 * problem's code must be one the route lists, and each SSE `data:` must match the stream's
 * schema. A mismatch is logged, recorded in `violations`, and answered as a 500 problem naming
 * the route and the issues (an SSE stream, already under way, is cut off instead).
 *
 * For tests (test/support/test-app.ts installs it): it costs a serialization and a parse per
 * response, so production does not run it unless asked to.
 */
export class ResponseContractChecks implements NestInterceptor {
  readonly violations: ResponseViolation[] = [];
  /** SSE frames are shared by every client of a topic: each is checked once. */
  private readonly checkedFrames = new WeakSet<Buffer>();

  constructor(private readonly logger: Logger) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<ShellRequest & { route?: { path?: string } }>();
    const response = context.switchToHttp().getResponse<ServerResponse>();
    const route = `${request.method} ${request.route?.path ?? pathOf(request)}`;
    const contract = contractOf(context.getHandler());
    if (contract === undefined) {
      return next
        .handle()
        .pipe(
          map(() =>
            this.violate(response, { route, status: response.statusCode, detail: 'the route has no contract (@ApiRoute)', issues: [] }),
          ),
        );
    }
    const stream = Object.values(contract.responses).find((declared) => declared.kind === 'event-stream');
    if (stream !== undefined) this.watchEventStream(response, stream.schema, route);
    return next.handle().pipe(
      map((value) => this.checkSuccess(contract, route, response, value)),
      catchError((error: unknown) => this.checkError(contract, route, response, error)),
    );
  }

  private checkSuccess(contract: RouteContract, route: string, response: ServerResponse, value: unknown): unknown {
    // A handler that wrote the response itself (SSE) is checked as it writes.
    if (response.headersSent) return value;
    const status = response.statusCode;
    const declared = contract.responses[status];
    if (declared === undefined) {
      return this.violate(response, {
        route,
        status,
        detail: `status ${status} is not declared (${Object.keys(contract.responses).join(', ')} are)`,
        issues: [],
      });
    }
    if (declared.kind === 'event-stream')
      return this.violate(response, { route, status, detail: 'an event stream was declared, but the handler returned', issues: [] });
    if (declared.kind === 'text') {
      if (typeof value === 'string') return value;
      return this.violate(response, {
        route,
        status,
        detail: `status ${status} is declared as text, but the handler returned no string`,
        issues: [],
      });
    }
    if (declared.kind === 'empty') {
      if (value === undefined || value === null || value === '') return value;
      return this.violate(response, {
        route,
        status,
        detail: `status ${status} is declared without a body, but the handler returned one`,
        issues: [],
      });
    }
    // What the client receives: undefined members dropped, dates as strings.
    const sent: unknown = value === undefined ? undefined : JSON.parse(JSON.stringify(value));
    const parsed = declared.schema.safeParse(sent);
    if (parsed.success) return value;
    return this.violate(response, {
      route,
      status,
      detail: `the body of ${status} does not match its schema`,
      issues: toValidationIssues(parsed.error, 'body'),
    });
  }

  private checkError(contract: RouteContract, route: string, response: ServerResponse, error: unknown): Observable<unknown> {
    const answered = toProblem(error).problem;
    // Unexpected errors are the ProblemFilter's to log and hide; a stream can no longer change its status.
    if (answered.code === 'internal' || response.headersSent || (answerableCodes(contract) as string[]).includes(answered.code)) {
      return throwError(() => error);
    }
    return of(
      this.violate(response, {
        route,
        status: answered.status,
        detail: `answered ${answered.status} ${answered.code} ("${answered.detail}"), a code its contract does not list`,
        issues: [],
      }),
    );
  }

  private violate(response: ServerResponse, violation: ResponseViolation): Problem {
    this.record(violation);
    response.statusCode = 500;
    response.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
    response.setHeader('Cache-Control', 'no-store');
    return problem('internal', `response contract violated by ${violation.route}: ${summary(violation)}`, {
      route: violation.route,
      issues: violation.issues,
    });
  }

  private record(violation: ResponseViolation): void {
    this.violations.push(violation);
    this.logger.error('response contract violated', { ...violation });
  }

  /** Checks each `data:` line as the handler writes it; a bad one ends the stream. */
  private watchEventStream(response: ServerResponse, schema: z.ZodType, route: string): void {
    const write = response.write;
    // The replacement write needs both: the response as `this`, these checks by name.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const checks = this;
    response.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]): boolean {
      const violation = checks.checkFrames(chunk, schema, route);
      if (violation === null) return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
      checks.record(violation);
      (write as (...args: unknown[]) => boolean).call(
        this,
        `: response contract violated: ${summary(violation).replace(/[\r\n]/g, ' ')}\n\n`,
      );
      this.destroy();
      return false;
    } as ServerResponse['write'];
  }

  private checkFrames(chunk: unknown, schema: z.ZodType, route: string): ResponseViolation | null {
    if (Buffer.isBuffer(chunk) && this.checkedFrames.has(chunk)) return null;
    const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : '';
    for (const line of text.split('\n')) {
      if (!line.startsWith('data:')) continue;
      let data: unknown;
      try {
        data = JSON.parse(line.slice(5));
      } catch {
        return { route, status: 200, detail: 'an event’s data is not JSON', issues: [] };
      }
      const parsed = schema.safeParse(data);
      if (!parsed.success)
        return {
          route,
          status: 200,
          detail: 'an event’s data does not match its schema',
          issues: toValidationIssues(parsed.error, 'data'),
        };
    }
    if (Buffer.isBuffer(chunk)) this.checkedFrames.add(chunk);
    return null;
  }
}

function summary(violation: ResponseViolation): string {
  const issues = violation.issues.slice(0, 5).map((issue) => `${issue.path}: ${issue.message}`);
  const more = violation.issues.length > 5 ? [`and ${violation.issues.length - 5} more`] : [];
  return [violation.detail, ...issues, ...more].join('; ');
}

/** Turns the checks on for an app, before `init()`/`listen()`; the caller reads `violations`. */
export function enableResponseChecks(app: INestApplication, logger: Logger): ResponseContractChecks {
  const checks = new ResponseContractChecks(logger.child({ component: 'response-checks' }));
  app.useGlobalInterceptors(checks);
  return checks;
}
