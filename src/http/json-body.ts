import type { ServerResponse } from 'node:http';
import { PassThrough, type Transform } from 'node:stream';
import zlib from 'node:zlib';
import { ValidationFailedError, type ValidationIssue } from '../core/errors.js';
import type { NextFunction, ShellRequest } from './http-request.js';
import { PayloadTooLargeError, RequestTimeoutError, UnsupportedMediaTypeError } from './http.errors.js';

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

/** Whether the request says its body is JSON. */
export const isJsonRequest = (request: ShellRequest): boolean => isJsonMediaType(request.headers['content-type']);

/** The `charset` parameter of a Content-Type, lower-cased, or undefined. */
function charsetOf(contentType: string | undefined): string | undefined {
  for (const parameter of (contentType ?? '').split(';').slice(1)) {
    const [name, value] = parameter.split('=', 2).map((part) => part.trim());
    if (name.toLowerCase() === 'charset' && value !== undefined) return value.replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  return undefined;
}

/** Content-Encodings a body may come in (as Express's body parser took them). */
const DECODERS: Record<string, () => Transform> = {
  identity: () => new PassThrough(),
  gzip: () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

export interface JsonBodyOptions {
  /** Largest body, as sent and as decoded (FLOSTRA_MAX_BODY_BYTES). */
  limitBytes: number;
  /** Once reading began, the whole body must arrive within it (FLOSTRA_HTTP_BODY_TIMEOUT_MS). */
  timeoutMs: number;
  /**
   * Read bodies of authenticated requests only (authenticateOnArrival left a Principal). True
   * whenever the app authenticates at all; a body of a request without a valid token is never
   * read, and the AuthGuard answers 401.
   */
  authenticatedOnly: boolean;
  /** Requests whose body is read without a token all the same: the sign-in, whose body carries one. */
  readsUnauthenticated?: (request: ShellRequest) => boolean;
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
 * The one body reader: JSON bodies (`application/json` or `+json`, UTF-8) into `request.body`.
 * Everything that can be refused without reading is refused first, and the connection is then
 * closed after the answer, so the rest of the body is never waited for: a request without a
 * valid token (left unread; the AuthGuard answers 401, a @Public() route goes on), any other
 * media type or charset (415), a Content-Length over the limit (413, also under `Expect:
 * 100-continue`, whose `100 Continue` is sent only now that the body will be read). While
 * reading: over the limit is 413 at once, and a body that has not fully arrived within
 * `timeoutMs` is 408.
 */
export function readJsonBody(options: JsonBodyOptions) {
  return (request: ShellRequest, response: ServerResponse, next: NextFunction): void => {
    if (!hasBody(request)) return next();
    if (options.authenticatedOnly && request.principal === undefined && options.readsUnauthenticated?.(request) !== true) {
      return leaveUnread(response, next);
    }
    if (!isJsonRequest(request)) {
      const given = request.headers['content-type'];
      return leaveUnread(
        response,
        next,
        new UnsupportedMediaTypeError(
          given === undefined
            ? 'a request body needs Content-Type: application/json'
            : `expected Content-Type application/json, got ${given}`,
        ),
      );
    }
    const charset = charsetOf(request.headers['content-type']);
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      return leaveUnread(response, next, new UnsupportedMediaTypeError(`a JSON body must be encoded in UTF-8, not ${charset}`));
    }
    const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    const decoder = Object.hasOwn(DECODERS, encoding) ? DECODERS[encoding] : undefined;
    if (decoder === undefined)
      return leaveUnread(response, next, new UnsupportedMediaTypeError(`unsupported Content-Encoding ${encoding}`));
    const declared = request.headers['content-length'];
    if (declared !== undefined && Number(declared) > options.limitBytes) {
      return leaveUnread(response, next, new PayloadTooLargeError(options.limitBytes));
    }
    if (/^100-continue$/i.test(request.headers.expect ?? '')) response.writeContinue();
    readBody(request, decoder(), encoding, options).then(
      (body) => {
        try {
          request.body = parseJson(body);
        } catch (error) {
          return next(error);
        }
        next();
      },
      (error: unknown) => leaveUnread(response, next, error),
    );
  };
}

/** The body stays unread: the connection closes after the answer instead of waiting for the rest. */
function leaveUnread(response: ServerResponse, next: NextFunction, error?: unknown): void {
  if (!response.headersSent) response.setHeader('Connection', 'close');
  next(error);
}

/** Reads the whole body, decoded, within the limits; rejects with the DomainError to answer. */
function readBody(request: ShellRequest, decoder: Transform, encoding: string, options: JsonBodyOptions): Promise<Buffer> {
  const { limitBytes, timeoutMs } = options;
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let sent = 0;
    let decoded = 0;
    let settled = false;
    const timer = setTimeout(() => settle(new RequestTimeoutError(timeoutMs)), timeoutMs);
    const onSent = (chunk: Buffer): void => {
      sent += chunk.length;
      if (sent > limitBytes) settle(new PayloadTooLargeError(limitBytes));
    };
    const onDecoded = (chunk: Buffer): void => {
      decoded += chunk.length;
      if (decoded > limitBytes) settle(new PayloadTooLargeError(limitBytes));
      else chunks.push(chunk);
    };
    const onEnd = (): void => settle(null);
    const onCutShort = (): void => {
      if (!request.complete) settle(new ValidationFailedError('the request body was cut short or does not match its Content-Length'));
    };
    const onDecodeError = (error: Error): void =>
      settle(
        new ValidationFailedError(`the request body is not valid ${encoding}: ${error.message}`, [
          { path: 'body', message: `not valid ${encoding} data` },
        ]),
      );
    function settle(error: unknown): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.off('data', onSent);
      request.off('close', onCutShort);
      request.off('error', onCutShort);
      decoder.off('data', onDecoded);
      decoder.off('end', onEnd);
      decoder.off('error', onDecodeError);
      if (error === null) return resolve(Buffer.concat(chunks));
      // Stop reading: what is still on its way is not waited for (the connection closes).
      request.unpipe(decoder);
      request.pause();
      decoder.destroy();
      reject(error);
    }
    request.on('data', onSent);
    request.once('close', onCutShort);
    request.once('error', onCutShort);
    decoder.on('data', onDecoded);
    decoder.once('end', onEnd);
    decoder.once('error', onDecodeError);
    request.pipe(decoder);
  });
}

/** A JSON object or array (as Express's strict parser took them); an empty body reads as `{}`. */
function parseJson(body: Buffer): unknown {
  const text = utf8TextOf(body);
  if (text.length === 0) return {};
  const first = /^[ \t\r\n]*(.)/s.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw malformedJson('a JSON object or array is expected');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw malformedJson(withoutQuotedInput(error instanceof Error ? error.message : String(error)));
  }
}

/**
 * The body as text, its BOM dropped. Bytes that are not UTF-8 are refused rather than replaced by
 * U+FFFD: a replaced byte would be stored as a character the client never sent (promise 11).
 */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function utf8TextOf(body: Buffer): string {
  try {
    return strictUtf8.decode(body);
  } catch {
    throw new ValidationFailedError('malformed JSON body: the body is not valid UTF-8', [
      { path: 'body', message: 'not valid UTF-8 text' },
    ]);
  }
}

function malformedJson(reason: string): ValidationFailedError {
  return new ValidationFailedError(`malformed JSON body: ${reason}`, [
    { path: 'body', message: 'not valid JSON (an object or array is expected)' },
  ]);
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * A POST, PUT or PATCH without a body reads as `{}`, so handlers validate one shape. A body that
 * was sent but left unread (no valid token) stays undefined: it is refused, never taken for `{}`.
 */
export function emptyBodyAsObject(request: ShellRequest, _response: ServerResponse, next: NextFunction): void {
  if (request.body === undefined && !hasBody(request) && METHODS_WITH_BODY.has(request.method ?? '')) request.body = {};
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
