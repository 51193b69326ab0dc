import type { ExecutionEvent } from './execution.events.js';

/** UTF-8 bytes of a value as JSON (`null` for undefined): how the execution's size bounds measure. */
export function jsonBytes(value: unknown): number {
  // Buffer.byteLength counts without encoding: half the cost of TextEncoder's copy, on every fold.
  return Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
}

/** What an event adds to its execution's history: its data as JSON. */
export function eventBytes(event: ExecutionEvent): number {
  return jsonBytes(event.data);
}
