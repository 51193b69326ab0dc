import { ExecutionLimitError } from '../../core/errors.js';
import type { ExecutionCommand } from './execution.commands.js';
import type { ExecutionEvent } from './execution.events.js';
import type { StartedExecution } from './execution.state.js';
import { eventBytes, jsonBytes } from './json-bytes.js';

/**
 * What one execution may grow to (promise 13, docs/architecture.md): the deciders refuse a
 * command that would take it beyond, and append nothing. Given by configuration
 * (`executionLimitsOf`), never read here from the environment.
 */
export interface ExecutionLimits {
  /** Signals kept (received, not yet taken by a `wait_signal` node) at once. */
  maxKeptSignals: number;
  /** UTF-8 bytes of the kept signals' payloads as JSON, together. */
  maxKeptSignalBytes: number;
  /** Progress entries a task keeps: the latest ones. */
  taskProgressKept: number;
  /** UTF-8 bytes of one progress entry as JSON. */
  maxTaskProgressBytes: number;
  /** UTF-8 bytes of the data of all the execution's events as JSON, together. */
  maxHistoryBytes: number;
}

export const DEFAULT_EXECUTION_LIMITS: ExecutionLimits = Object.freeze({
  maxKeptSignals: 100,
  maxKeptSignalBytes: 1024 * 1024,
  taskProgressKept: 10,
  maxTaskProgressBytes: 16 * 1024,
  maxHistoryBytes: 32 * 1024 * 1024,
});

/**
 * Commands that only end what runs: a full execution must still be cancelled, and its deadlines
 * must still end it, or it would hold its attempt, tasks and quota slot for ever.
 */
const ENDING_COMMANDS: ReadonlySet<ExecutionCommand['type']> = new Set([
  'RequestCancel',
  'TimeOutAttempt',
  'TimeOutTask',
  'TimeOutExecution',
]);

/** Refuses (409 `execution_full`) events that would take the history beyond its bound. */
export function requireRoomInHistory(
  s: StartedExecution,
  command: ExecutionCommand,
  events: readonly ExecutionEvent[],
  limits: ExecutionLimits,
): void {
  if (events.length === 0 || ENDING_COMMANDS.has(command.type)) return;
  const before = s.historyBytes ?? 0;
  const after = events.reduce((sum, event) => sum + eventBytes(event), before);
  if (after <= limits.maxHistoryBytes) return;
  throw new ExecutionLimitError(
    'execution_full',
    `the execution's history would grow to ${after} bytes; its limit is ${limits.maxHistoryBytes} bytes`,
    { limitBytes: limits.maxHistoryBytes, historyBytes: before },
  );
}

/** Refuses a signal that would be kept beyond the count (409 `too_many_signals`) or size (413 `signals_too_large`) bound. */
export function requireRoomForKeptSignal(s: StartedExecution, payload: unknown, limits: ExecutionLimits): void {
  const kept = (s.signals ?? []).filter((signal) => signal.deliveredTo === null);
  if (kept.length >= limits.maxKeptSignals) {
    throw new ExecutionLimitError(
      'too_many_signals',
      `the execution keeps ${kept.length} signals no node has taken; the limit is ${limits.maxKeptSignals}`,
      { limit: limits.maxKeptSignals },
    );
  }
  const bytes = kept.reduce((sum, signal) => sum + jsonBytes(signal.payload), jsonBytes(payload));
  if (bytes > limits.maxKeptSignalBytes) {
    throw new ExecutionLimitError(
      'signals_too_large',
      `the kept signals' payloads would take ${bytes} bytes as JSON; the limit is ${limits.maxKeptSignalBytes} bytes`,
      { limitBytes: limits.maxKeptSignalBytes },
    );
  }
}

/** Refuses (413 `progress_too_large`) a progress entry beyond its size bound. */
export function requireProgressWithinLimit(progress: unknown, limits: ExecutionLimits): void {
  if (progress === undefined) return;
  const bytes = jsonBytes(progress);
  if (bytes <= limits.maxTaskProgressBytes) return;
  throw new ExecutionLimitError(
    'progress_too_large',
    `the progress is ${bytes} bytes as JSON; the limit is ${limits.maxTaskProgressBytes} bytes`,
    { limitBytes: limits.maxTaskProgressBytes },
  );
}
