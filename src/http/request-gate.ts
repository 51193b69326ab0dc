import type { ServerResponse } from 'node:http';
import { FairRequestGate, type FairRequestGateLimits } from './fair-request-gate.js';
import { TooManyRequestsError } from './http.errors.js';
import { pathOf, type NextFunction, type ShellRequest } from './http-request.js';

/** Seconds a request refused by the gate is told to wait (`Retry-After`). */
export const REQUEST_GATE_RETRY_AFTER_SECONDS = 1;

/**
 * Express middleware, after authentication and before the body reader: a request made with a
 * token (or a browser session) goes through that token's place in the FairRequestGate (on the
 * monotonic clock: the window is a span of time, not a date). Not
 * gated: requests without a principal (they are refused or public), long requests (live streams,
 * task polls), health checks, and the global `worker` role's calls, whose number the worker's own
 * concurrency bounds.
 */
export function gateRequests(limits: FairRequestGateLimits) {
  const gate = new FairRequestGate(limits);
  return (request: ShellRequest, response: ServerResponse, next: NextFunction): void => {
    const principal = request.principal;
    if (principal === undefined || principal.global.has('worker') || ungated(request)) return next();
    const key = principal.tokenId;
    let started = false;
    const entry = gate.enter(key, performance.now(), () => {
      started = true;
      next();
    });
    if (entry.kind === 'refused') {
      response.setHeader('Connection', 'close');
      return next(new TooManyRequestsError(limits.inFlight, limits.queued, REQUEST_GATE_RETRY_AFTER_SECONDS));
    }
    // 'close' comes once the answer is sent, or when the client goes away: a request handled
    // gives its place to the next, one still waiting (its client gave up) leaves the queue.
    response.once('close', () => {
      if (started) gate.leave(key, performance.now());
      else if (entry.kind === 'wait') entry.cancel();
    });
    if (entry.kind === 'go') {
      started = true;
      next();
    }
  };
}

function ungated(request: ShellRequest): boolean {
  const path = pathOf(request);
  return path.startsWith('/health/') || isLongRequest(request.method ?? '', path);
}

const TASK_POLL = /^\/v1\/workspaces\/[^/]+\/task-queues\/[^/]+\/poll$/;

/**
 * Requests that may be held open until something happens: live streams (bounded per token by
 * FLOSTRA_SSE_MAX_STREAMS_PER_TOKEN) and task polls (route contracts mark them `longPoll`). Gated,
 * a few of them would hold a token's whole share and stall its short calls: a task worker's
 * heartbeats behind its own polls.
 */
export function isLongRequest(method: string, path: string): boolean {
  return (method === 'GET' && path.endsWith('/events')) || (method === 'POST' && TASK_POLL.test(path));
}
