import type { ExecutionEvent } from './execution.events.js';

const encoder = new TextEncoder();

/** UTF-8 bytes of a value as JSON (`null` for undefined): how the execution's size bounds measure. */
export function jsonBytes(value: unknown): number {
  return encoder.encode(JSON.stringify(value ?? null)).length;
}

/** What an event adds to its execution's history: its data as JSON. */
export function eventBytes(event: ExecutionEvent): number {
  return jsonBytes(event.data);
}
