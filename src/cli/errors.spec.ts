import { describe, expect, it } from '@jest/globals';
import { EXIT, exitCodeOfStatus, problemError } from './errors.js';

describe('exit codes of HTTP answers', () => {
  it.each([
    [400, EXIT.usage],
    [401, EXIT.auth],
    [403, EXIT.auth],
    [404, EXIT.notFound],
    [409, EXIT.conflict],
    [413, EXIT.usage],
    [429, EXIT.unavailable],
    [503, EXIT.unavailable],
    [500, EXIT.failure],
  ])('%i exits %i', (status, code) => {
    expect(exitCodeOfStatus(status)).toBe(code);
  });

  it("tells a problem's title, detail and code", () => {
    const error = problemError(409, {
      title: 'Invalid state for this action',
      detail: 'execution already failed',
      code: 'invalid_state',
      status: 409,
    });
    expect(error.message).toBe('Invalid state for this action: execution already failed [invalid_state]');
    expect(error.exitCode).toBe(EXIT.conflict);
    expect(error.problem?.code).toBe('invalid_state');
  });

  it('copes with an answer that is not a problem', () => {
    const error = problemError(502, 'Bad Gateway');
    expect(error.message).toBe('HTTP 502: Bad Gateway');
    expect(error.exitCode).toBe(EXIT.unavailable);
  });
});
