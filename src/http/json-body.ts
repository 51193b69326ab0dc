import type { ServerResponse } from 'node:http';
import { ValidationFailedError, type ValidationIssue } from '../core/errors.js';
import type { NextFunction, ShellRequest } from './http-request.js';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from './http.errors.js';

/** `application/json` or any `application/<something>+json`, parameters ignored. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const mediaType = contentType.split(';')[0].trim().toLowerCase();
  return mediaType === 'application/json' || /^application\/[a-z0-9.!#$&^_-]+\+json$/.test(mediaType);
}

/** Whether the request carries a body at all (a declared length above 0, or chunked). */
export function hasBody(request: ShellRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Predicate handed to the JSON parser as its `type` option. */
export const isJsonRequest = (request: ShellRequest): boolean => isJsonMediaType(request.headers['content-type']);

/** Any body must be JSON: checked before anything reads it. */
export function rejectNonJsonBodies(request: ShellRequest, _response: ServerResponse, next: NextFunction): void {
  if (hasBody(request) && !isJsonRequest(request)) {
    const given = request.headers['content-type'];
    next(
      new UnsupportedMediaTypeError(
        given === undefined
          ? 'a request body needs Content-Type: application/json'
          : `expected Content-Type application/json, got ${given}`,
      ),
    );
    return;
  }
  next();
}

interface BodyParserError {
  type?: unknown;
  message?: unknown;
}

/**
 * The parser's reason without the text it quotes from the body (`Unexpected token 'h', "{"value":
 * hunt"... is not valid JSON`): a body may carry a secret's value, and no answer echoes one.
 * What is left names the kind of error and, when the parser gives it, the position.
 */
function withoutQuotedInput(message: string): string {
  const reason = message.split(/['"]/, 1)[0].replace(/[\s,]+$/, '');
  const position = /at position \d+/.exec(message)?.[0];
  return position === undefined || reason.includes(position) ? reason : `${reason} (${position})`;
}

/**
 * Express error middleware placed right after the JSON parser: turns its errors into
 * DomainErrors so they reach the ProblemFilter with the right code.
 */
export function bodyParserErrors(limitBytes: number) {
  return (error: unknown, _request: ShellRequest, _response: ServerResponse, next: NextFunction): void => {
    const type = (error as BodyParserError | null)?.type;
    switch (type) {
      case 'entity.parse.failed':
        next(
          new ValidationFailedError(`malformed JSON body: ${withoutQuotedInput(String((error as BodyParserError).message))}`, [
            { path: 'body', message: 'not valid JSON (an object or array is expected)' },
          ]),
        );
        return;
      case 'entity.too.large':
        next(new PayloadTooLargeError(limitBytes));
        return;
      case 'charset.unsupported':
        next(new UnsupportedMediaTypeError('a JSON body must be encoded in UTF-8'));
        return;
      case 'encoding.unsupported':
        next(new UnsupportedMediaTypeError('unsupported Content-Encoding'));
        return;
      case 'request.aborted': // the client is gone; nothing will read the answer
      case 'request.size.invalid':
        next(new ValidationFailedError('the request body was cut short or does not match its Content-Length'));
        return;
      default:
        next(error);
    }
  };
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** A POST, PUT or PATCH without a body reads as `{}`, so handlers validate one shape. */
export function emptyBodyAsObject(request: ShellRequest, _response: ServerResponse, next: NextFunction): void {
  if (request.body === undefined && METHODS_WITH_BODY.has(request.method ?? '')) request.body = {};
  next();
}

/** Deepest nesting of objects and arrays in a body: digests, JSON.stringify and jsonb all recurse. */
export const MAX_JSON_DEPTH = 128;

// Postgres jsonb cannot store U+0000, and an unpaired surrogate is not Unicode text: either
// would pass validation and then fail the append with a 500.
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what must be refused
const UNSTORABLE_TEXT = /[\u0000\p{Cs}]/u;

interface JsonFrame {
  value: unknown;
  depth: number;
  parent: JsonFrame | null;
  key: string;
}

function pathOfFrame(frame: JsonFrame): string {
  const keys: string[] = [];
  for (let at: JsonFrame | null = frame; at?.parent; at = at.parent) keys.unshift(at.key);
  return ['body', ...keys].join('.');
}

/** The first value of a parsed body that cannot be stored as it is, or null. Iterative: any depth is safe. */
export function findUnstorableJson(body: unknown): ValidationIssue | null {
  const stack: JsonFrame[] = [{ value: body, depth: 0, parent: null, key: '' }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { value } = frame;
    if (typeof value === 'string') {
      if (UNSTORABLE_TEXT.test(value)) return { path: pathOfFrame(frame), message: 'text cannot contain U+0000 or unpaired surrogates' };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (frame.depth >= MAX_JSON_DEPTH) return { path: pathOfFrame(frame), message: `nested deeper than ${MAX_JSON_DEPTH} levels` };
    for (const [key, child] of Object.entries(value)) {
      if (UNSTORABLE_TEXT.test(key))
        return { path: pathOfFrame(frame), message: 'field names cannot contain U+0000 or unpaired surrogates' };
      stack.push({ value: child, depth: frame.depth + 1, parent: frame, key });
    }
  }
  return null;
}

/** Promise 11 (docs/architecture.md): a body the store cannot hold is a 400 here, not a 500 at the append. */
export function rejectUnstorableJson(request: ShellRequest, _response: ServerResponse, next: NextFunction): void {
  const issue = findUnstorableJson(request.body);
  if (issue === null) {
    next();
    return;
  }
  next(new ValidationFailedError(`invalid request body: ${issue.path}: ${issue.message}`, [issue]));
}
