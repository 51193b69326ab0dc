/**
 * Typed errors with a stable `code`. The HTTP layer maps each code to one RFC 9457 problem;
 * nothing else in the project decides status codes.
 */
export type ErrorCode =
  | 'validation_failed'
  | 'unauthenticated'
  | 'forbidden'
  | 'csrf_required'
  | 'not_found'
  | 'idempotency_conflict'
  | 'invalid_state'
  | 'stale_attempt'
  | 'lease_expired'
  | 'approval_mismatch'
  | 'secret_not_found'
  | 'payload_too_large'
  | 'output_too_large'
  | 'unsupported_media_type'
  | 'concurrency_conflict'
  | 'position_ahead'
  | 'resume_expired'
  | 'request_timeout'
  | 'too_many_streams'
  | 'too_many_requests'
  | 'limit_reached'
  | 'too_many_sessions'
  | 'too_many_sign_ins'
  | 'too_many_signals'
  | 'signals_too_large'
  | 'progress_too_large'
  | 'execution_full'
  | 'unavailable';

export interface ValidationIssue {
  path: string;
  message: string;
}

export class DomainError extends Error {
  /**
   * The refusal holds in every later state of the stream too (an attempt that ended never runs
   * again), so one decided on an older, cached state stands without reading the stream again.
   */
  final = false;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = new.target.name;
  }

  /** Marks the refusal as holding in every later state (see `final`). */
  asFinal(): this {
    this.final = true;
    return this;
  }
}

export class ValidationFailedError extends DomainError {
  constructor(
    message: string,
    readonly issues: ValidationIssue[] = [],
  ) {
    super('validation_failed', message, { issues });
  }
}

export class NotFoundError extends DomainError {
  constructor(message: string) {
    super('not_found', message);
  }
}

export class InvalidStateError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('invalid_state', message, details);
  }
}

export class StaleAttemptError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('stale_attempt', message, details);
  }
}

export class LeaseExpiredError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('lease_expired', message, details);
  }
}

export class IdempotencyConflictError extends DomainError {
  constructor(message: string) {
    super('idempotency_conflict', message);
  }
}

export class ApprovalMismatchError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('approval_mismatch', message, details);
  }
}

/** A graph references secrets its workspace does not hold (`missing` names them; never their values). */
export class SecretNotFoundError extends DomainError {
  constructor(readonly missing: readonly string[]) {
    super('secret_not_found', `the workspace has no secret named ${missing.join(', ')}`, { missing: [...missing] });
  }
}

export class UnavailableError extends DomainError {
  constructor(message: string) {
    super('unavailable', message);
  }
}

/** What a process may find down: the answer names it, never how it is reached. */
export type Dependency = 'event_store' | 'postgres' | 'kafka';

/**
 * A dependency (a database, the broker) cannot be reached or dropped the connection
 * (`503 unavailable`): the request may be repeated once it is back. Adapters turn their
 * connection failures into it; every other failure stays what it is.
 */
export class DependencyUnavailableError extends UnavailableError {
  constructor(
    readonly dependency: Dependency,
    options?: { cause?: unknown },
  ) {
    super(`${dependency.replace('_', ' ')} is unavailable; try again later`);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** An append whose expected revision did not match the stream. Carries both revisions. */
export class WrongExpectedRevisionError extends DomainError {
  constructor(
    readonly streamId: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super('concurrency_conflict', `stream ${streamId}: expected revision ${expected}, actual ${actual}`, {
      streamId,
      expected,
      actual,
    });
  }
}

/** Codes of the bounds on what one execution may hold (promise 13, docs/architecture.md). */
export type ExecutionLimitCode = 'too_many_signals' | 'signals_too_large' | 'progress_too_large' | 'execution_full';

/**
 * A command refused because the execution would grow beyond one of its bounds: 413 for a value
 * too large, 409 for a count reached or a full history. Nothing of the command is recorded.
 */
export class ExecutionLimitError extends DomainError {
  constructor(code: ExecutionLimitCode, message: string, details: Record<string, unknown>) {
    super(code, message, details);
  }
}

/** A task's output (or progress) larger than a node's output may be (docs/api.md, "Task queues"). HTTP 413. */
export class OutputTooLargeError extends DomainError {
  constructor(message: string, limitBytes: number) {
    super('output_too_large', message, { limitBytes });
  }
}
