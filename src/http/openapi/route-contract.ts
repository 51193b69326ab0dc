import { SetMetadata } from '@nestjs/common';
import type { z } from 'zod';
import type { GlobalRole, WorkspaceGrant } from '../../auth/principal.js';
import type { ErrorCode } from '../../core/errors.js';

/**
 * What one HTTP route promises, declared next to its handler with `@ApiRoute(contract)`: the
 * OpenAPI document is generated from these, and in tests every response is checked against
 * them (response-checks.ts). Request parts reference the very zod schemas the code validates
 * with, so the documentation and the validation cannot differ.
 */
export interface RouteContract {
  /** Unique across the API: the name generated clients give the operation. */
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly access: RouteAccess;
  /**
   * The request may be held open until something happens (a long poll): like a live stream it is
   * not gated by its token's share of request handling (`isLongRequest` in src/http/request-gate.ts
   * recognizes it by its path).
   */
  readonly longPoll?: boolean;
  /** Path parameters, by the names the route's path uses. */
  readonly params?: z.ZodObject;
  readonly query?: z.ZodObject;
  /** Request headers the route reads, by their canonical names (`Idempotency-Key`). */
  readonly headers?: z.ZodObject;
  /** The JSON request body. Routes with a body also answer 408, 413 and 415 (the body reader's). */
  readonly body?: z.ZodType;
  /** Success responses by status. */
  readonly responses: Readonly<Record<number, RouteResponse>>;
  /**
   * Problem codes this route's handler can answer. `unauthenticated` (for routes that need a
   * token) and the body reader's codes (for routes with a body) are added by `answerableCodes`.
   */
  readonly errors: readonly ErrorCode[];
  /**
   * Schemas without an id of their own (domain schemas) that the document shows by these names,
   * wherever they appear: the names of all routes share one namespace.
   */
  readonly components?: Readonly<Record<string, z.ZodType>>;
  /**
   * Transforms inside these parts that keep their input's type (they sort or de-duplicate): the
   * document shows their output as their input, since JSON Schema cannot describe a transform.
   */
  readonly typeKeepingTransforms?: readonly z.ZodType[];
  /** Descriptions of parameters whose shared one (see document-builder.ts) does not fit. */
  readonly parameterDescriptions?: Readonly<Record<string, string>>;
}

/** Who may call a route. Roles are checked by the handler, never from the URL alone (promise 10). */
export type RouteAccess =
  | { readonly kind: 'public' }
  /** Any valid token (or browser session), whatever its roles. */
  | { readonly kind: 'authenticated' }
  /** A role in the workspace of the path, or of the resource the route loads (then 404 without any role there). */
  | { readonly kind: 'workspace'; readonly role: WorkspaceGrant; readonly of: 'path' | 'resource' }
  | { readonly kind: 'global'; readonly role: GlobalRole };

export type RouteResponse =
  | { readonly kind: 'json'; readonly description: string; readonly schema: z.ZodType }
  | { readonly kind: 'empty'; readonly description: string }
  /** Server-Sent Events: `schema` is the JSON of each event's `data:` line. */
  | { readonly kind: 'event-stream'; readonly description: string; readonly schema: z.ZodType }
  /** A text body of another format than JSON (the Prometheus exposition). */
  | { readonly kind: 'text'; readonly description: string; readonly contentType: string };

export const json = (description: string, schema: z.ZodType): RouteResponse => ({ kind: 'json', description, schema });
export const empty = (description: string): RouteResponse => ({ kind: 'empty', description });
export const eventStream = (description: string, schema: z.ZodType): RouteResponse => ({ kind: 'event-stream', description, schema });
export const text = (description: string, contentType: string): RouteResponse => ({ kind: 'text', description, contentType });

export const PUBLIC: RouteAccess = { kind: 'public' };
export const AUTHENTICATED: RouteAccess = { kind: 'authenticated' };
export const workspaceRole = (role: WorkspaceGrant, of: 'path' | 'resource'): RouteAccess => ({ kind: 'workspace', role, of });
export const globalRole = (role: GlobalRole): RouteAccess => ({ kind: 'global', role });

const CONTRACTS = new WeakSet<RouteContract>();

/** Declares a contract; `isRouteContract` recognizes it (the drift test finds them all). */
export function defineRoute<C extends RouteContract>(contract: C): C {
  CONTRACTS.add(contract);
  return contract;
}

export function isRouteContract(value: unknown): value is RouteContract {
  return typeof value === 'object' && value !== null && CONTRACTS.has(value as RouteContract);
}

export const ROUTE_CONTRACT = 'flostra:route-contract';

/** Attaches a route's contract to its handler method. */
export const ApiRoute = (contract: RouteContract): MethodDecorator => SetMetadata(ROUTE_CONTRACT, contract);

/** The contract `@ApiRoute` attached to a handler method, if any. */
export function contractOf(handler: object): RouteContract | undefined {
  return Reflect.getMetadata(ROUTE_CONTRACT, handler) as RouteContract | undefined;
}

/** The body reader answers these for any route that takes a body, before the handler runs. */
const BODY_CODES: readonly ErrorCode[] = ['validation_failed', 'request_timeout', 'payload_too_large', 'unsupported_media_type'];

/** Every problem code the route can answer, in the order of `ERROR_ORDER`. */
export function answerableCodes(contract: RouteContract): ErrorCode[] {
  const codes = new Set<ErrorCode>(contract.errors);
  if (contract.access.kind !== 'public') codes.add('unauthenticated');
  if (contract.body !== undefined) for (const code of BODY_CODES) codes.add(code);
  // A write with a body, made with a browser session cookie, needs its CSRF header (src/auth/session-auth.ts).
  if (contract.access.kind !== 'public' && contract.body !== undefined) codes.add('csrf_required');
  // A token's requests beyond its share of the api wait, and beyond its queue are refused
  // (src/http/request-gate.ts); live streams and the worker role are not gated.
  if (gated(contract)) codes.add('too_many_requests');
  return ERROR_ORDER.filter((code) => codes.has(code));
}

function gated(contract: RouteContract): boolean {
  if (contract.access.kind === 'public') return false;
  if (contract.access.kind === 'global' && contract.access.role === 'worker') return false;
  if (contract.longPoll === true) return false;
  return !Object.values(contract.responses).some((response) => response.kind === 'event-stream');
}

/** Problem codes by status, then as the API reference lists them. */
export const ERROR_ORDER = [
  'validation_failed',
  'unauthenticated',
  'forbidden',
  'csrf_required',
  'not_found',
  'request_timeout',
  'idempotency_conflict',
  'invalid_state',
  'stale_attempt',
  'lease_expired',
  'approval_mismatch',
  'secret_not_found',
  'concurrency_conflict',
  'too_many_signals',
  'execution_full',
  'position_ahead',
  'limit_reached',
  'resume_expired',
  'payload_too_large',
  'output_too_large',
  'signals_too_large',
  'progress_too_large',
  'unsupported_media_type',
  'too_many_streams',
  'too_many_requests',
  'too_many_sessions',
  'too_many_sign_ins',
  'unavailable',
] as const satisfies readonly ErrorCode[];

// A new ErrorCode must be placed in ERROR_ORDER, or it would never be documented.
const everyCodeOrdered: Exclude<ErrorCode, (typeof ERROR_ORDER)[number]> extends never ? true : never = true;
void everyCodeOrdered;
