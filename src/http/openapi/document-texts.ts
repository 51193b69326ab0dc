import type { ErrorCode } from '../../core/errors.js';

/** Prose of the OpenAPI document that belongs to no single route. */

/** What each problem code means, whichever route answers it (a route's description says more). */
export const PROBLEM_MEANINGS: Record<ErrorCode, string> = {
  validation_failed: 'the input is invalid (malformed JSON, a bad parameter, header or body field); `issues` names every problem.',
  unauthenticated: 'no bearer token, or one that is unknown or revoked.',
  forbidden: 'the token is known but lacks the role this needs (`requiredRole`).',
  csrf_required:
    'a write made with a browser session cookie lacks the X-Flostra-CSRF header of that session (GET /v1/sessions/csrf), or names another site in `Origin`; nothing was written.',
  not_found: 'no such resource, or none the token may read (existence is not revealed).',
  idempotency_conflict: 'this Idempotency-Key was used with a different request.',
  invalid_state: 'the resource is not in a state that allows this.',
  stale_attempt: 'the attempt is not current, or another claim holds it; do not run it.',
  lease_expired: 'the claim’s lease ran out; stop working on the attempt.',
  approval_mismatch: 'the action changed since it was shown for approval.',
  secret_not_found: 'the graph references secrets the workspace does not hold (`missing` names them).',
  concurrency_conflict: 'concurrent writes kept conflicting; nothing was written, retry.',
  position_ahead:
    'the resume position is of this store’s form but beyond the end of its event log (from another deployment, or made up); reconnect without it.',
  resume_expired:
    'events after the resume position may have been deleted by retention (FLOSTRA_RETENTION_DAYS; `horizon` is the newest deleted position); read the current state and reconnect without a position.',
  request_timeout: 'the request body did not arrive within FLOSTRA_HTTP_BODY_TIMEOUT_MS (`timeoutMs`); the connection is closed.',
  payload_too_large: 'the body exceeds FLOSTRA_MAX_BODY_BYTES (`limitBytes`), as declared by Content-Length or as read.',
  output_too_large: 'a task’s output is larger than a node’s output may be (`limitBytes`); nothing was recorded.',
  signals_too_large:
    'the signal would be kept (no node waits for it) and the kept signals’ payloads would exceed FLOSTRA_EXECUTION_MAX_KEPT_SIGNAL_BYTES (`limitBytes`); nothing was recorded.',
  progress_too_large:
    'the progress is larger than FLOSTRA_TASK_PROGRESS_MAX_BYTES (`limitBytes`); nothing was recorded, the lease was not extended.',
  too_many_signals:
    'the execution already keeps FLOSTRA_EXECUTION_MAX_KEPT_SIGNALS signals no node has taken (`limit`); nothing was recorded.',
  execution_full:
    'the execution’s history would exceed FLOSTRA_EXECUTION_MAX_HISTORY_BYTES (`limitBytes`); nothing was recorded. Only cancel and time-outs still end it.',
  unsupported_media_type: 'a body that is not JSON, or says a charset other than UTF-8.',
  too_many_streams:
    'too many live streams are open, for this token or for the process (`scope`, `limit`); close one, or retry after `Retry-After` seconds.',
  too_many_requests:
    'another token being active, this token already has FLOSTRA_HTTP_MAX_INFLIGHT_PER_TOKEN requests being handled and FLOSTRA_HTTP_MAX_QUEUED_PER_TOKEN waiting (`inFlight`, `queued`); retry after `Retry-After` seconds.',
  too_many_sessions:
    'this api process already holds as many browser sessions as it may (`limit`); nothing was created; retry after `Retry-After` seconds, when the oldest expires.',
  too_many_sign_ins:
    'too many sign-ins from this client address or with this token (`scope`, `limit` per minute); nothing was created; retry after `Retry-After` seconds.',
  unavailable: 'a dependency is down or a read model is behind; nothing was written, retry.',
  limit_reached: 'the workspace holds as many of this resource as it may (`resource`, `limit`); nothing was written, remove one first.',
};

/** Parameters that mean the same on every route, by name. */
export const PARAMETER_DESCRIPTIONS: Record<string, string> = {
  workspaceId: 'The workspace: 1-64 of `A-Z a-z 0-9 _ -`.',
  name: 'The workflow’s name: 1-64 of `A-Z a-z 0-9 _ -`.',
  executionId: 'The execution (a UUID, any case).',
  attemptId: 'The attempt (a UUID, any case), as the dispatch message named it.',
  nodeId: 'The approval node’s id in the graph.',
  revision: 'A published revision (from 1); the latest when absent.',
  minPosition: 'Wait until the read model reflects this position (e.g. a command response’s `position`); wins over X-Flostra-Min-Position.',
  consistency:
    '`latest` (default): reflect every write acknowledged before the query; `eventual`: whatever the read model holds now, without waiting.',
  'X-Flostra-Min-Position': 'As `minPosition`, for clients that prefer a header.',
  after: 'Only events after this position (an event’s `position`, or `nextCursor`).',
  limit: 'Page size.',
  cursor: 'The previous page’s `nextCursor`.',
  workflow: 'Only executions of this workflow (by name).',
  lastEventId: 'Resume after this position, for a first connection (an EventSource cannot send headers).',
  'Last-Event-ID': 'Resume after this position; sent by an EventSource when it reconnects.',
  'Idempotency-Key': 'Makes a retry safe: the same key and body again answer the first response. Visible ASCII, 1-255 characters.',
};

export const TAG_DESCRIPTIONS: Record<string, string> = {
  Workflows: 'Publish workflow graphs as immutable revisions, and read them.',
  Executions: 'Start, inspect, cancel, redrive and approve executions.',
  Secrets: 'Store a workspace’s secrets for http nodes to reference by name; no endpoint ever returns a value.',
  'Workspace settings': 'A workspace’s settings: its bound on concurrent executions.',
  'Worker protocol': 'How a worker claims an attempt, keeps its lease and reports the outcome.',
  'Live events': 'Execution events as Server-Sent Events, resumable without loss.',
  Audit: 'Who did what in a workspace: every command’s events with their actor.',
  Sessions: 'Browser sign-in for the web console (a session cookie and its CSRF value), and who the caller is.',
  Admin: 'Read models: status, lag and rebuilds.',
  Health: 'Probes for orchestrators.',
  Documentation: 'This document.',
};

/** Descriptions of named schemas that come from domain schemas without one. */
export const SCHEMA_DESCRIPTIONS: Record<string, string> = {
  WorkflowGraph: 'A workflow’s graph as it is published: fields with a default may be left out.',
  WorkflowGraphOutput: 'A published graph, normalized: every default filled in. This is what is digested, stored and run.',
  JsonValue: 'Any JSON value.',
  RetryPolicy: 'How many times a node (or, at the graph’s top level, the whole execution) is tried, and the backoff between tries.',
  RetryPolicyOutput: 'A retry policy with every default filled in.',
  Timeouts: 'An execution’s time limits: waiting for a claim, an attempt’s lease, the whole execution.',
  TimeoutsOutput: 'An execution’s time limits with every default filled in.',
  TransformConfig: 'A `transform` node’s config (also of a map’s inner `transform` node).',
  CodeConfig: 'A `code` node’s config (also of a map’s inner `code` node).',
  CodeConfigOutput: 'A `code` node’s config with every default filled in.',
  HttpConfig: 'An `http` node’s config (also of a map’s inner `http` node).',
  HttpConfigOutput: 'An `http` node’s config with every default filled in.',
  FailConfig: 'A `fail` node’s config (also of a map’s inner `fail` node).',
  FailConfigOutput: 'A `fail` node’s config with every default filled in.',
};
