import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ValidationFailedError } from '../core/errors.js';
import { parseBody, parseId, parseName, parseParams, uuidSchema } from './validation.js';

function failure(action: () => unknown): ValidationFailedError {
  try {
    action();
  } catch (error) {
    if (error instanceof ValidationFailedError) return error;
    throw error;
  }
  throw new Error('expected a ValidationFailedError');
}

describe('edge validation', () => {
  it('returns the parsed value', () => {
    expect(parseBody(z.object({ n: z.coerce.number() }), { n: '3' })).toEqual({ n: 3 });
  });

  it('lists every issue with its path, rooted at the source', () => {
    const error = failure(() => parseBody(z.object({ nodes: z.array(z.object({ id: z.string() })) }), { nodes: [{ id: 1 }, {}] }));
    expect(error.code).toBe('validation_failed');
    expect(error.issues.map((issue) => issue.path)).toEqual(['body.nodes.0.id', 'body.nodes.1.id']);
    expect(error.message).toMatch(/^invalid request body: body\.nodes\.0\.id: /);
  });

  it('roots paths at another source when told', () => {
    const error = failure(() => parseBody(z.object({ limit: z.coerce.number().int() }), { limit: 'x' }, 'query'));
    expect(error.issues[0].path).toBe('query.limit');
    expect(error.message).toMatch(/^invalid query: /);
  });

  it('validates path parameters together', () => {
    const error = failure(() =>
      parseParams(z.object({ executionId: uuidSchema, attemptId: uuidSchema }), { executionId: 'x', attemptId: 'y' }),
    );
    expect(error.issues).toEqual([
      { path: 'params.executionId', message: 'expected a UUID' },
      { path: 'params.attemptId', message: 'expected a UUID' },
    ]);
  });

  it('normalizes uuids to lower case and rejects anything else', () => {
    expect(parseId('9E1F1D2A-5B3C-4D4E-8F50-6A7B8C9D0E1F', 'executionId')).toBe('9e1f1d2a-5b3c-4d4e-8f50-6a7b8c9d0e1f');
    for (const bad of ['', '9e1f1d2a5b3c4d4e8f506a7b8c9d0e1f', '../etc/passwd', undefined]) {
      expect(failure(() => parseId(bad, 'executionId')).issues[0].path).toBe('params.executionId');
    }
  });

  it('accepts names of the workspace-id alphabet only', () => {
    expect(parseName('acme-prod_1', 'workspaceId')).toBe('acme-prod_1');
    expect(failure(() => parseName('a/b', 'workspaceId')).issues[0].path).toBe('params.workspaceId');
    expect(() => parseName('x'.repeat(65), 'name')).toThrow(ValidationFailedError);
  });
});
