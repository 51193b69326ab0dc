import { setTimeout as sleep } from 'node:timers/promises';
import { workerActor } from '../../core/actors.js';
import { type Bus, type IncomingMessage, PRODUCED_AT_HEADER, TOPICS } from '../../core/bus.port.js';
import type { Clock } from '../../core/clock.port.js';
import { DomainError } from '../../core/errors.js';
import type { IdGenerator } from '../../core/ids.js';
import type { Logger } from '../../core/logger.js';
import { LruSet } from '../../core/lru-set.js';
import { NO_METRICS, type Metrics } from '../../core/metrics.port.js';
import { contextFrom, inSpan, type Link, linkTo, SpanKind } from '../../observability/tracing.js';
import type { ExecutionStreams } from '../../executions/application/execution-streams.js';
import type { ExecutionCommand } from '../../executions/domain/execution.commands.js';
import { MAX_RESULT_MESSAGE_BYTES, parseResultMessage, type ResultMessage } from './result-message.schema.js';

export interface ResultIngestorDeps {
  executions: Pick<ExecutionStreams, 'handleBatch'>;
  bus: Bus;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** The ingest lag is measured here. */
  metrics?: Pick<Metrics, 'ingested'>;
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

/** At most this many executions of one batch are written at once. */
const EXECUTIONS_IN_PARALLEL = 16;

/**
 * Turns worker results into commands on their execution streams (fencing and strict leases are
 * the decider's), or into dead letters with the reason. The results of one execution that
 * arrive together are decided in order and written as one append. Resolves once every message
 * is fully handled; rejects only on an infrastructure failure that outlived its retries, so the
 * offsets are not committed and the messages come again (those already written are replays).
 */
export class ResultIngestor {
  /** Recent message ids; an older duplicate still meets the decider, which takes a redelivered identical result as a no-op. */
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

  async handleBatch(messages: IncomingMessage[]): Promise<void> {
    const byExecution = new Map<string, { message: IncomingMessage; result: ResultMessage }[]>();
    const batchIds = new Set<string>();
    for (const message of messages) {
      const parsed = parseResultMessage(message.value, this.maxBytes);
      if (!parsed.ok) {
        await this.deadLetter(message, { code: parsed.code, message: parsed.message });
        continue;
      }
      const { result } = parsed;
      if (this.seen.has(result.messageId) || batchIds.has(result.messageId)) continue;
      batchIds.add(result.messageId);
      const group = byExecution.get(result.executionId) ?? [];
      group.push({ message, result });
      byExecution.set(result.executionId, group);
    }
    const groups = [...byExecution.values()];
    const failures: unknown[] = [];
    // Bounded fan-out: a large batch must not take every connection of the pool.
    const next = { index: 0 };
    await Promise.all(
      Array.from({ length: Math.min(EXECUTIONS_IN_PARALLEL, groups.length) }, async () => {
        while (next.index < groups.length && failures.length === 0) {
          const group = groups[next.index++];
          try {
            await this.recordGroup(group);
          } catch (error) {
            failures.push(error);
          }
        }
      }),
    );
    if (failures.length > 0) throw failures[0];
  }

  /**
   * One execution's results as one append; each refused result becomes a dead letter. The append
   * runs in a span that continues the trace of the group's last result (the others are linked),
   * so the events it appends carry that trace on.
   */
  private async recordGroup(group: { message: IncomingMessage; result: ResultMessage }[]): Promise<void> {
    const executionId = group[0].result.executionId;
    const last = group[group.length - 1];
    const links = group.slice(0, -1).flatMap(({ message }) => linkTo(message.headers) ?? ([] as Link[]));
    const attributes = { 'flostra.execution_id': executionId, 'flostra.results': group.length, 'flostra.result_kind': last.result.kind };
    const outcome = await inSpan(
      'ingest results',
      { kind: SpanKind.CONSUMER, parent: contextFrom(last.message.headers), links, attributes },
      () =>
        this.withRetry('recording worker results', () =>
          this.deps.executions.handleBatch(
            executionId,
            group.map(
              ({ result }) =>
                () =>
                  this.commandOf(result),
            ),
          ),
        ),
    );
    if (outcome.appended !== null) {
      const appended = Date.now();
      const metrics = this.deps.metrics ?? NO_METRICS;
      for (const { message } of group) {
        const produced = Number(message.headers[PRODUCED_AT_HEADER]);
        if (Number.isFinite(produced) && produced > 0) metrics.ingested((appended - produced) / 1000);
      }
    }
    for (const [index, verdict] of outcome.verdicts.entries()) {
      if (!('rejected' in verdict)) continue;
      const { code, message } = verdict.rejected;
      if (!isRejection(verdict.rejected)) throw verdict.rejected;
      await this.deadLetter(group[index].message, { code, message });
    }
    // Remembered only once handled: a message whose handling failed must be tried again.
    for (const { result } of group) this.seen.add(result.messageId);
  }

  private commandOf(result: ResultMessage): ExecutionCommand {
    const fence = { attemptId: result.attemptId, workerId: result.workerId, fencingToken: result.fencingToken };
    const metadata = { now: this.deps.clock.now(), actor: workerActor(result.workerId) };
    const extra = {
      ...(result.output !== undefined ? { output: result.output } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
    };
    switch (result.kind) {
      case 'node_started':
      case 'node_succeeded':
      case 'node_failed':
      case 'node_skipped':
      case 'node_waiting':
        return {
          type: 'RecordNodeResult',
          data: {
            ...fence,
            kind: result.kind,
            nodeId: result.nodeId!,
            ...extra,
            ...(result.reason !== undefined ? { reason: result.reason } : {}),
            ...(result.wait !== undefined
              ? {
                  wait:
                    result.wait.kind === 'task' || result.wait.kind === 'subworkflow'
                      ? { kind: result.wait.kind, input: result.wait.input ?? null }
                      : { kind: result.wait.kind },
                }
              : {}),
          },
          metadata,
        };
      case 'map_items': {
        const { started, completed, failed } = result.items!;
        return {
          type: 'RecordMapItems',
          data: { ...fence, nodeId: result.nodeId!, started, completed: completed.map(({ index, output }) => ({ index, output })), failed },
          metadata,
        };
      }
      case 'attempt_succeeded':
      case 'attempt_failed':
      case 'attempt_cancelled': {
        const outcome = ({ attempt_succeeded: 'succeeded', attempt_failed: 'failed', attempt_cancelled: 'cancelled' } as const)[
          result.kind
        ];
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
          data: {
            ...fence,
            outcome: 'suspended',
            ...(result.nodeId !== undefined ? { approval: { nodeId: result.nodeId, action } } : {}),
            ...(result.tasks !== undefined ? { tasks: result.tasks } : {}),
            ...(result.timers !== undefined ? { timers: result.timers } : {}),
            ...(result.signals !== undefined ? { signals: result.signals } : {}),
            nextAttemptId: this.deps.ids.uuid(),
            jitter: Math.random(),
          },
          metadata,
        };
      }
    }
  }

  /** Promise 11 (docs/architecture.md): an invalid or refused result goes to the dead-letter topic, never dropped silently. */
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
    this.deps.logger.warn('worker result dead-lettered', {
      reason,
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
    });
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
