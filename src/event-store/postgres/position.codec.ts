import { ValidationFailedError } from '../../core/errors.js';
import type { Position } from '../../core/event-store.port.js';

/**
 * A global position of the Postgres event store: the id of the transaction that appended the
 * event and the event's sequence number, zero-padded to fixed width,
 * `"<20-digit transactionId>-<19-digit seq>"`. Fixed width makes plain string order (JavaScript
 * `<`, SQL `collate "C"`, `Array.prototype.sort`) agree with log order, so code holding
 * positions as text never misorders "999-…" and "1000-…". Ordered by transaction id first: see
 * event-store.schema.ts for why that never lets a reader skip a late commit.
 */
export interface LogPosition {
  transactionId: bigint;
  seq: bigint;
}

const XID8_MAX = 2n ** 64n - 1n;
const BIGINT_MAX = 2n ** 63n - 1n;
const TRANSACTION_ID_DIGITS = 20;
const SEQ_DIGITS = 19;
const POSITION_PATTERN = /^(\d{20})-(\d{19})$/;

/** Before every event: `after` = null reads from the start. */
export const LOG_START: LogPosition = { transactionId: 0n, seq: 0n };

export function encodePosition(position: LogPosition): Position {
  return `${position.transactionId.toString().padStart(TRANSACTION_ID_DIGITS, '0')}-${position.seq.toString().padStart(SEQ_DIGITS, '0')}`;
}

/** Parses a cursor a client sent back; anything that is not one of ours is a validation error. */
export function decodePosition(position: Position): LogPosition {
  if (!isPosition(position)) throw invalidPosition(position);
  const [transactionId, seq] = position.split('-');
  return { transactionId: BigInt(transactionId), seq: BigInt(seq) };
}

/** Whether `text` is a position of this store (see decodePosition); never throws. */
export function isPosition(text: unknown): boolean {
  const match = typeof text === 'string' ? POSITION_PATTERN.exec(text) : null;
  return match !== null && BigInt(match[1]) <= XID8_MAX && BigInt(match[2]) <= BIGINT_MAX;
}

/** Negative, zero or positive as `a` is before, at or after `b`; null is before everything. */
export function comparePositions(a: Position | null, b: Position | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  const left = decodePosition(a);
  const right = decodePosition(b);
  if (left.transactionId !== right.transactionId) return left.transactionId < right.transactionId ? -1 : 1;
  return left.seq === right.seq ? 0 : left.seq < right.seq ? -1 : 1;
}

function invalidPosition(position: unknown): ValidationFailedError {
  return new ValidationFailedError('invalid position', [
    { path: 'position', message: `${JSON.stringify(position)} is not a position of this event store` },
  ]);
}
