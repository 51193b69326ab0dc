import { ValidationFailedError } from '../../core/errors.js';
import type { EventToAppend, ExpectedRevision } from '../../core/event-store.port.js';
import { UUID_PATTERN } from '../../core/ids.js';

/** How `event_store.append` receives an expected revision: a kind, plus the number for 'exact'. */
export type ExpectedRevisionParams = ['any' | 'no_stream' | 'stream_exists' | 'exact', number | null];

/** Far above any id Flostra builds, and far below what a btree index entry can hold. */
const MAX_STREAM_ID_LENGTH = 1_000;

export function validateStreamId(streamId: unknown): void {
  if (typeof streamId !== 'string' || streamId.length === 0 || streamId.length > MAX_STREAM_ID_LENGTH) {
    throw invalid('streamId', `must be a non-empty string of at most ${MAX_STREAM_ID_LENGTH} characters`);
  }
}

export function validateEvents(events: unknown): asserts events is EventToAppend[] {
  if (!Array.isArray(events) || events.length === 0) throw invalid('events', 'must be a non-empty array');
  const seen = new Set<string>();
  events.forEach((event: Partial<EventToAppend>, index) => {
    if (typeof event?.id !== 'string' || !UUID_PATTERN.test(event.id)) throw invalid(`events[${index}].id`, 'must be a uuid');
    const id = event.id.toLowerCase();
    if (seen.has(id)) throw invalid(`events[${index}].id`, 'appears twice in one append');
    seen.add(id);
    if (typeof event.type !== 'string' || event.type.length === 0) {
      throw invalid(`events[${index}].type`, 'must be a non-empty string');
    }
    if (event.metadata !== undefined && (typeof event.metadata !== 'object' || event.metadata === null || Array.isArray(event.metadata))) {
      throw invalid(`events[${index}].metadata`, 'must be an object');
    }
  });
}

export function expectedRevisionParams(expected: ExpectedRevision): ExpectedRevisionParams {
  if (expected === 'any' || expected === 'no_stream' || expected === 'stream_exists') return [expected, null];
  if (typeof expected === 'number' && Number.isSafeInteger(expected) && expected >= 0) return ['exact', expected];
  throw invalid('expectedRevision', `must be 'any', 'no_stream', 'stream_exists' or a revision, not ${JSON.stringify(expected)}`);
}

/** A count or a revision: a non-negative integer (positive when `min` is 1). */
export function validateInteger(path: string, value: unknown, min: 0 | 1): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw invalid(path, `must be an integer of at least ${min}`);
  }
  return value;
}

export function validateStreamPrefixes(prefixes: unknown): string[] | null {
  if (prefixes === undefined) return null;
  // An empty list would match nothing: almost surely a caller meaning "no filter".
  if (!Array.isArray(prefixes) || prefixes.length === 0 || prefixes.some((prefix) => typeof prefix !== 'string')) {
    throw invalid('streamPrefixes', 'must be a non-empty array of strings, or absent to read every stream');
  }
  return prefixes as string[];
}

function invalid(path: string, message: string): ValidationFailedError {
  return new ValidationFailedError(`invalid ${path}: ${message}`, [{ path, message }]);
}
