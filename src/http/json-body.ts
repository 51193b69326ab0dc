import type { ServerResponse } from 'node:http';
import { ValidationFailedError } from '../core/errors.js';
import type { NextFunction, ShellRequest } from './http-request.js';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from './http.errors.js';

/** `application/json` or any `application/<something>+json`, parameters ignored. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
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
    next(new UnsupportedMediaTypeError(
      given === undefined ? 'a request body needs Content-Type: application/json' : `expected Content-Type application/json, got ${given}`,
    ));
    return;
  }
  next();
}

interface BodyParserError {
  type?: unknown;
  message?: unknown;
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
        next(new ValidationFailedError(`malformed JSON body: ${String((error as BodyParserError).message)}`, [
          { path: 'body', message: 'not valid JSON (an object or array is expected)' },
        ]));
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
