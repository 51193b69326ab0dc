import { describe, expect, it } from '@jest/globals';
import { DependencyUnavailableError, WrongExpectedRevisionError } from '../core/errors.js';
import { toProblem } from '../http/problem.js';
import { asUnavailable, isConnectionFailure } from './connection-failure.js';

const withCode = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('isConnectionFailure', () => {
  it.each([
    ['connection refused', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['connection reset', withCode('ECONNRESET')],
    ['the server shutting down (57P01)', withCode('57P01', 'terminating connection due to administrator command')],
    ['the server starting up (57P03)', withCode('57P03', 'the database system is starting up')],
    ['a connection exception (08006)', withCode('08006')],
    ['too many connections (53300)', withCode('53300')],
    ['a connection terminated under a query', new Error('Connection terminated unexpectedly')],
    ['a pool that could not connect in time', new Error('timeout exceeded when trying to connect')],
    ['every address refused', new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')])],
  ])('recognizes %s', (_, error) => {
    expect(isConnectionFailure(error)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('23505')],
    ['a serialization failure', withCode('40001')],
    ['a syntax error', withCode('42601')],
    ['a domain error', new WrongExpectedRevisionError('s', '1', '2')],
    ['not an error at all', 'ECONNREFUSED'],
    ['an empty aggregate', new AggregateError([])],
  ])('leaves %s alone', (_, error) => {
    expect(isConnectionFailure(error)).toBe(false);
  });
});

describe('asUnavailable', () => {
  it('turns a connection failure into a 503 unavailable that names Postgres, never the address', () => {
    const cause = withCode('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.7:5432');
    const error = asUnavailable(cause);
    expect(error).toBeInstanceOf(DependencyUnavailableError);
    expect((error as DependencyUnavailableError).cause).toBe(cause);
    const { problem, unexpected } = toProblem(error);
    expect(unexpected).toBe(false);
    expect(problem).toMatchObject({ status: 503, code: 'unavailable' });
    expect(JSON.stringify(problem)).not.toContain('10.0.0.7');
  });

  it('passes every other error through as it is', () => {
    const error = withCode('23505');
    expect(asUnavailable(error)).toBe(error);
  });
});
