import { z } from 'zod';
import { IDENTIFIER_PATTERN } from '../core/ids.js';
import { ValidationFailedError, type ValidationIssue } from '../core/errors.js';
import { UUID_PATTERN } from '../core/ids.js';

/** Zod issues as `{ path, message }`, each path rooted at where the value came from. */
export function toValidationIssues(error: z.ZodError, root: string): ValidationIssue[] {
  return error.issues.map((issue) => ({
    path: [root, ...issue.path.map(String)].filter((part) => part !== '').join('.'),
    message: issue.message,
  }));
}

function parseAt<S extends z.ZodType>(schema: S, value: unknown, root: string, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = toValidationIssues(parsed.error, root);
  const first = issues[0];
  throw new ValidationFailedError(first === undefined ? what : `${what}: ${first.path}: ${first.message}`, issues);
}

/**
 * Validates input at the edge: a mismatch is a 400 validation_failed listing every issue.
 * `source` roots the issue paths: `body` by default, or e.g. `query`, `Idempotency-Key`.
 */
export function parseBody<S extends z.ZodType>(schema: S, value: unknown, source = 'body'): z.output<S> {
  return parseAt(schema, value, source, source === 'body' ? 'invalid request body' : `invalid ${source}`);
}

/** Validates all path parameters at once, e.g. `z.object({ executionId: uuidSchema })`. */
export function parseParams<S extends z.ZodType>(schema: S, params: unknown): z.output<S> {
  return parseAt(schema, params, 'params', 'invalid path parameters');
}

/** A UUID in any case, normalized to lower case so it matches the ids the store holds. */
export const uuidSchema = z
  .string()
  .regex(UUID_PATTERN, 'expected a UUID')
  .transform((id) => id.toLowerCase());

/** A workspace id or workflow name in a path: 1-64 of `[A-Za-z0-9_-]`. */
export const nameSchema = z.string().regex(IDENTIFIER_PATTERN, 'expected 1-64 characters of A-Z, a-z, 0-9, "_" or "-"');

/**
 * One UUID path parameter (`parseId(executionId, 'executionId')`): a malformed id is a 400
 * before anything reaches the store.
 */
export function parseId(value: unknown, param: string): string {
  return parseAt(uuidSchema, value, `params.${param}`, 'invalid path parameters');
}

/** One name-like path parameter (`parseName(workspaceId, 'workspaceId')`). */
export function parseName(value: unknown, param: string): string {
  return parseAt(nameSchema, value, `params.${param}`, 'invalid path parameters');
}
