import { ValidationFailedError } from '../../core/errors.js';
import type { Position } from '../../core/event-store.port.js';

/** A KurrentDB global position: the commit and prepare positions of a record in the log. */
export interface LogPosition {
  commit: bigint;
  prepare: bigint;
}

const DIGITS = 20;
const UINT64_MAX = 2n ** 64n - 1n;
const POSITION_PATTERN = /^(\d{20})-(\d{20})$/;

/**
 * `"<commit>-<prepare>"`, each zero-padded to 20 digits (the width of a uint64): two cursors of
 * this store compare as plain strings in log order, as docs/architecture.md, "Global positions and late commits", requires.
 */
export function encodePosition({ commit, prepare }: LogPosition): Position {
  if (commit < 0n || prepare < 0n || commit > UINT64_MAX || prepare > UINT64_MAX) {
    throw new RangeError(`not a KurrentDB position: ${commit}/${prepare}`);
  }
  return `${commit.toString().padStart(DIGITS, '0')}-${prepare.toString().padStart(DIGITS, '0')}`;
}

/** Parses a cursor a client sent back; anything that is not one of ours is a validation error. */
export function decodePosition(position: Position): LogPosition {
  if (!isPosition(position)) throw invalidPosition(position);
  const [commit, prepare] = position.split('-');
  return { commit: BigInt(commit), prepare: BigInt(prepare) };
}

/** Whether `text` is a position of this store (see decodePosition); never throws. */
export function isPosition(text: unknown): boolean {
  const match = typeof text === 'string' ? POSITION_PATTERN.exec(text) : null;
  return match !== null && BigInt(match[1]) <= UINT64_MAX && BigInt(match[2]) <= UINT64_MAX;
}

/** Negative, zero or positive as `a` is before, at or after `b` (commit first, then prepare). */
export function compareLogPositions(a: LogPosition, b: LogPosition): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  return a.prepare === b.prepare ? 0 : a.prepare < b.prepare ? -1 : 1;
}

function invalidPosition(position: unknown): ValidationFailedError {
  return new ValidationFailedError('invalid position', [
    { path: 'position', message: `${JSON.stringify(position)} is not a position of this event store` },
  ]);
}
