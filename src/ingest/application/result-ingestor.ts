import { setTimeout as sleep } from 'node:timers/promises';
import { type Bus, type IncomingMessage, TOPICS } from '../../core/bus.port.js';
import type { Clock } from '../../core/clock.port.js';
import { DomainError } from '../../core/errors.js';
import type { IdGenerator } from '../../core/ids.js';
import type { Logger } from '../../core/logger.js';
import type { ExecutionRunner } from '../../executions/application/execution-runner.js';
import type { ExecutionCommand } from '../../executions/domain/execution.commands.js';
import { LruSet } from './lru-set.js';
import { MAX_RESULT_MESSAGE_BYTES, parseResultMessage, type ResultMessage } from './result-message.schema.js';

export interface ResultIngestorDeps {
  runner: Pick<ExecutionRunner, 'run'>;
  bus: Bus;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
}

export interface ResultIngestorOptions {
  maxMessageBytes?: number;
  /** How many recent messageIds are remembered for dedupe. */
  dedupeCapacity?: number;
  /** Bounded retries of infrastructure failures (store or broker down) inside one delivery. */
  retry?: { attempts: number; initialMs: number; maxMs: number };
}

/** Why a message went to the dead-letter topic: a stable code and a readable message. */
export interface DeadLetterReason {
  code: string;
  message: string;
}

/** A dead letter keeps at most this much of the original text: it must fit the broker itself. */
const MAX_DEAD_LETTER_ORIGINAL_CHARS = 256 * 1024;

/**
 * Turns one worker result into a command on its execution stream (fencing and strict leases are
 * the decider's), or into a dead letter with the reason. Resolves once the message is fully
 * handled; rejects only on an infrastructure failure that outlived its retries, so the offset is
 * not committed and the message comes again.
 */
export class ResultIngestor {
  private readonly seen: LruSet;
  private readonly maxBytes: number;
  private readonly retry: { attempts: number; initialMs: number; maxMs: number };

  constructor(
    private readonly deps: ResultIngestorDeps,
    options: ResultIngestorOptions = {},
  ) {
    this.seen = new LruSet(options.dedupeCapacity ?? 100_000);
    this.maxBytes = options.maxMessageBytes ?? MAX_RESULT_MESSAGE_BYTES;
    this.retry = options.retry ?? { attempts: 5, initialMs: 100, maxMs: 2_000 };
  }

  async handle(message: IncomingMessage): Promise<void> {
    const parsed = parseResultMessage(message.value, this.maxBytes);
    if (!parsed.ok) return this.deadLetter(message, { code: parsed.code, message: parsed.message });
    const { result } = parsed;
    if (this.seen.has(result.messageId)) return;
    const rejection = await this.withRetry('recording a worker result', () => this.record(result));
    if (rejection !== null) await this.deadLetter(message, rejection);
    // Remembered only once handled: a message whose handling failed must be tried again.
    this.seen.add(result.messageId);
  }

  /** Runs the command; a DomainError the decider raised is a verdict on the message, not a failure. */
  private async record(result: ResultMessage): Promise<DeadLetterReason | null> {
    try {
      await this.deps.runner.run(result.executionId, () => this.commandOf(result));
      return null;
    } catch (error) {
      if (isRejection(error)) return { code: error.code, message: error.message };
      throw error;
    }
  }

  private commandOf(result: ResultMessage): ExecutionCommand {
    const fence = { attemptId: result.attemptId, workerId: result.workerId, fencingToken: result.fencingToken };
    const metadata = { now: this.deps.clock.now(), actor: result.workerId };
    const extra = {
      ...(result.output !== undefined ? { output: result.output } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
    };
    switch (result.kind) {
      case 'node_started':
      case 'node_succeeded':
      case 'node_failed':
      case 'node_skipped':
        return {
          type: 'RecordNodeResult',
          data: { ...fence, kind: result.kind, nodeId: result.nodeId!, ...extra, ...(result.reason !== undefined ? { reason: result.reason } : {}) },
          metadata,
        };
      case 'attempt_succeeded':
      case 'attempt_failed':
      case 'attempt_cancelled': {
        const outcome = ({ attempt_succeeded: 'succeeded', attempt_failed: 'failed', attempt_cancelled: 'cancelled' } as const)[result.kind];
        return {
          type: 'CompleteAttempt',
          data: { ...fence, outcome, ...extra, nextAttemptId: this.deps.ids.uuid(), jitter: Math.random() },
          metadata,
        };
      }
      case 'attempt_suspended': {
        const action = (result.output as { action?: unknown } | undefined)?.action ?? null;
        return {
          type: 'CompleteAttempt',
          data: { ...fence, outcome: 'suspended', approval: { nodeId: result.nodeId!, action }, nextAttemptId: this.deps.ids.uuid(), jitter: Math.random() },
          metadata,
        };
      }
    }
  }

  /** Promise 11: an invalid or refused result goes to the dead-letter topic, never dropped silently. */
  private async deadLetter(message: IncomingMessage, reason: DeadLetterReason): Promise<void> {
    const truncated = message.value.length > MAX_DEAD_LETTER_ORIGINAL_CHARS;
    const letter = {
      reason,
      original: truncated ? message.value.slice(0, MAX_DEAD_LETTER_ORIGINAL_CHARS) : message.value,
      ...(truncated ? { originalTruncated: true, originalLength: message.value.length } : {}),
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
      receivedAt: this.deps.clock.now().toISOString(),
    };
    await this.withRetry('publishing a dead letter', () =>
      this.deps.bus.publish(TOPICS.resultsDlq, [{ key: message.key || 'unkeyed', value: JSON.stringify(letter) }]),
    );
    this.deps.logger.warn('worker result dead-lettered', { reason, topic: message.topic, partition: message.partition, offset: message.offset });
  }

  private async withRetry<T>(what: string, work: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (attempt >= this.retry.attempts) throw error;
        const delayMs = Math.min(this.retry.maxMs, this.retry.initialMs * 2 ** (attempt - 1));
        this.deps.logger.warn(`${what} failed; retrying`, { err: error, attempt, retryInMs: delayMs });
        await sleep(delayMs);
      }
    }
  }
}

/** Verdicts of the decider (stale_attempt, lease_expired, invalid_state, not_found, ...); not infrastructure trouble. */
function isRejection(error: unknown): error is DomainError {
  return error instanceof DomainError && error.code !== 'concurrency_conflict' && error.code !== 'unavailable';
}
