import { HttpException } from '@nestjs/common';
import { DomainError, type ErrorCode } from '../core/errors.js';

/** Every `code` a problem response can carry: the DomainError codes, and `internal` for the rest. */
export type ProblemCode = ErrorCode | 'internal';

/** The one HTTP error shape: RFC 9457 problem details plus a stable `code`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  /** Extension members: `issues` for validation_failed, and a DomainError's other details. */
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const STATUS: Record<ProblemCode, number> = {
  validation_failed: 400,
  unauthenticated: 401,
  forbidden: 403,
  csrf_required: 403,
  not_found: 404,
  request_timeout: 408,
  idempotency_conflict: 409,
  invalid_state: 409,
  stale_attempt: 409,
  lease_expired: 409,
  approval_mismatch: 409,
  secret_not_found: 409,
  concurrency_conflict: 409,
  position_ahead: 409,
  limit_reached: 409,
  resume_expired: 410,
  payload_too_large: 413,
  output_too_large: 413,
  signals_too_large: 413,
  progress_too_large: 413,
  too_many_signals: 409,
  execution_full: 409,
  unsupported_media_type: 415,
  too_many_streams: 429,
  too_many_requests: 429,
  too_many_sessions: 429,
  too_many_sign_ins: 429,
  unavailable: 503,
  internal: 500,
};

const TITLE: Record<ProblemCode, string> = {
  validation_failed: 'Validation failed',
  unauthenticated: 'Unauthenticated',
  forbidden: 'Forbidden',
  csrf_required: 'CSRF token required',
  not_found: 'Not found',
  request_timeout: 'Request timeout',
  idempotency_conflict: 'Idempotency key reused with another request',
  invalid_state: 'Invalid state for this action',
  stale_attempt: 'Stale attempt',
  lease_expired: 'Lease expired',
  approval_mismatch: 'Approval does not match the pending action',
  secret_not_found: 'Secret not found',
  concurrency_conflict: 'Concurrent modification',
  position_ahead: 'Position ahead of the event log',
  limit_reached: 'A bound of the workspace is reached',
  resume_expired: 'Resume position older than retention',
  payload_too_large: 'Payload too large',
  output_too_large: 'Output too large',
  signals_too_large: 'Kept signals too large',
  progress_too_large: 'Progress too large',
  too_many_signals: 'Too many kept signals',
  execution_full: 'Execution history full',
  unsupported_media_type: 'Unsupported media type',
  too_many_streams: 'Too many open streams',
  too_many_requests: 'Too many requests',
  too_many_sessions: 'Too many browser sessions',
  too_many_sign_ins: 'Too many sign-ins',
  unavailable: 'Service unavailable',
  internal: 'Internal server error',
};

// Nest's own HttpExceptions (unknown route, body-parser errors it maps) by status. Any other
// status is a wiring mistake (only DomainErrors decide statuses): it answers 500 and is logged.
const CODE_BY_STATUS = new Map<number, ProblemCode>([
  [400, 'validation_failed'],
  [401, 'unauthenticated'],
  [403, 'forbidden'],
  [404, 'not_found'],
  [409, 'invalid_state'],
  [413, 'payload_too_large'],
  [415, 'unsupported_media_type'],
  [503, 'unavailable'],
]);

const RESERVED = new Set(['type', 'title', 'status', 'detail', 'code', 'instance']);

export function problemTypeOf(code: ProblemCode): string {
  return `urn:flostra:problem:${code}`;
}

export function statusOf(code: ProblemCode): number {
  return STATUS[code];
}

export function problem(code: ProblemCode, detail: string, extensions: Record<string, unknown> = {}): Problem {
  const body: Problem = { type: problemTypeOf(code), title: TITLE[code], status: STATUS[code], detail, code };
  for (const [key, value] of Object.entries(extensions)) {
    if (!RESERVED.has(key) && value !== undefined) body[key] = value;
  }
  return body;
}

const INTERNAL_DETAIL = 'an unexpected error occurred; it has been logged';

/**
 * Maps anything thrown to its problem. `unexpected` marks errors whose message must not reach
 * the client (the caller logs them instead).
 */
export function toProblem(error: unknown): { problem: Problem; unexpected: boolean } {
  if (error instanceof DomainError && error.code in STATUS) {
    return { problem: problem(error.code, error.message, error.details), unexpected: false };
  }
  if (error instanceof HttpException) {
    const code = CODE_BY_STATUS.get(error.getStatus());
    if (code !== undefined) return { problem: problem(code, error.message), unexpected: false };
  }
  return { problem: problem('internal', INTERNAL_DETAIL), unexpected: true };
}
