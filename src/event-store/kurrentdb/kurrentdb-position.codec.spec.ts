import { describe, expect, it } from '@jest/globals';
import { ValidationFailedError } from '../../core/errors.js';
import { compareLogPositions, decodePosition, encodePosition, isPosition } from './kurrentdb-position.codec.js';

const at = (commit: bigint, prepare: bigint) => encodePosition({ commit, prepare });

describe('KurrentDB event store positions', () => {
  it('round-trips commit and prepare positions through the opaque string', () => {
    const position = { commit: 2n ** 64n - 1n, prepare: 2n ** 63n };
    expect(decodePosition(encodePosition(position))).toEqual(position);
    expect(at(1234n, 1200n)).toBe('00000000000000001234-00000000000000001200');
  });

  it('sorts as plain strings in log order (commit first, then prepare)', () => {
    const inLogOrder = [at(9n, 9n), at(10n, 3n), at(10n, 10n), at(999n, 999n), at(1000n, 1000n), at(2n ** 40n, 2n ** 40n)];
    expect([...inLogOrder].reverse().sort()).toEqual(inLogOrder);
    for (let i = 1; i < inLogOrder.length; i++) {
      expect(compareLogPositions(decodePosition(inLogOrder[i - 1]), decodePosition(inLogOrder[i]))).toBeLessThan(0);
    }
  });

  it.each([
    '',
    'abc',
    '1-2',
    '-1-1',
    '1234-1234',
    ` ${at(1n, 2n)}`,
    '18446744073709551616-00000000000000000001',
    '00000000000000000001-0000000000000000001',
  ])('rejects %j as a validation error, and isPosition says so without throwing', (cursor) => {
    expect(() => decodePosition(cursor)).toThrow(ValidationFailedError);
    expect(isPosition(cursor)).toBe(false);
  });

  it('knows its own positions, and not those of the Postgres store (20-19 digits)', () => {
    expect(isPosition(at(1234n, 1200n))).toBe(true);
    expect(isPosition('00000000000000001234-0000000000000001200')).toBe(false);
  });
});
