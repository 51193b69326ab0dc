import { describe, expect, it } from '@jest/globals';
import { ValidationFailedError } from '../../core/errors.js';
import { comparePositions, decodePosition, encodePosition, isPosition } from './position.codec.js';

const at = (transactionId: bigint, seq: bigint) => encodePosition({ transactionId, seq });

describe('Postgres event store positions', () => {
  it('round-trips a transaction id and sequence number through the opaque string', () => {
    const position = { transactionId: 2n ** 64n - 1n, seq: 2n ** 63n - 1n };
    expect(decodePosition(encodePosition(position))).toEqual(position);
    expect(at(1000n, 55n)).toBe('00000000000000001000-0000000000000000055');
  });

  it('orders by transaction id first, then by sequence number, with null before everything', () => {
    // A later transaction can hold a smaller sequence number: the transaction id decides.
    expect(comparePositions(at(10n, 900n), at(11n, 5n))).toBeLessThan(0);
    expect(comparePositions(at(11n, 5n), at(11n, 6n))).toBeLessThan(0);
    expect(comparePositions(at(11n, 6n), at(11n, 6n))).toBe(0);
    expect(comparePositions(null, at(1n, 1n))).toBeLessThan(0);
    expect(comparePositions(null, null)).toBe(0);
  });

  it('sorts as plain strings in log order, so text comparisons elsewhere stay correct', () => {
    const inLogOrder = [at(9n, 1n), at(9n, 10n), at(10n, 2n), at(999n, 3n), at(1000n, 4n), at(2n ** 40n, 5n)];
    expect([...inLogOrder].reverse().sort()).toEqual(inLogOrder);
  });

  it.each([
    '',
    'abc',
    '1',
    '1-2',
    '1-2-3',
    '-1-1',
    ` ${at(1n, 2n)}`,
    '18446744073709551616-0000000000000000001',
    '00000000000000000001-9223372036854775808',
  ])('rejects %j as a validation error, and isPosition says so without throwing', (cursor) => {
    expect(() => decodePosition(cursor)).toThrow(ValidationFailedError);
    expect(isPosition(cursor)).toBe(false);
  });

  it('knows its own positions, and not those of the KurrentDB store (20-20 digits)', () => {
    expect(isPosition(at(1000n, 55n))).toBe(true);
    expect(isPosition('00000000000000001000-00000000000000000055')).toBe(false);
  });
});
