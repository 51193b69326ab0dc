import { uuidV5 } from '../../core/ids.js';
import { MAX_RESULT_MESSAGE_BYTES, PRODUCED_AT_HEADER, type OutgoingMessage } from '../../core/bus.port.js';
import { traceMessageHeaders } from '../../core/traceparent.js';
import type { ExecutionError } from '../../executions/domain/execution.events.js';
import { currentTraceHeaders } from '../../observability/tracing.js';
import type { DagEvent, MapItemFacts } from '../dag/dag.types.js';
import type { ResultSink } from './result-sink.js';

export type ResultKind =
  | 'node_started'
  | 'node_succeeded'
  | 'node_failed'
  | 'node_skipped'
  | 'node_waiting'
  | 'map_items'
  | 'attempt_succeeded'
  | 'attempt_failed'
  | 'attempt_cancelled'
  | 'attempt_suspended';

export interface ResultBody {
  kind: ResultKind;
  nodeId?: string;
  output?: unknown;
  error?: ExecutionError;
  reason?: string;
  /** `node_waiting`: what the node waits for (a task or a child execution, with its input; a timer; a signal). */
  wait?: { kind: 'task' | 'subworkflow'; input: unknown } | { kind: 'timer' | 'signal' };
  /** `attempt_suspended`: the task nodes waiting for their tasks, and the subworkflow nodes for their children. */
  tasks?: readonly string[];
  /** `attempt_suspended`: the `delay` nodes waiting for their timers, the `wait_signal` nodes for a signal. */
  timers?: readonly string[];
  signals?: readonly string[];
  /** `map_items`: items of the map `nodeId` that started, succeeded or failed. */
  items?: MapItemFacts;
}

/** The result message body of a DAG runner event. */
export function resultOf(event: DagEvent): ResultBody {
  if (event.kind !== 'map_items') return event;
  const { kind, nodeId, started, completed, failed } = event;
  return { kind, nodeId, items: { started, completed, failed } };
}

/**
 * A result that would make a message over the limit the ingestor takes: refused before anything
 * is sent (the ingestor would dead-letter it, and the attempt would sit until its lease expired).
 */
export class ResultTooLargeError extends Error {
  constructor(
    readonly result: ResultKind,
    readonly bytes: number,
    readonly limitBytes: number,
  ) {
    super(`a ${result} result message would be ${bytes} bytes; the limit is ${limitBytes}`);
    this.name = 'ResultTooLargeError';
  }
}

export interface ResultPublisherOptions {
  /** How long a held result waits for a report to travel with before it goes out alone. */
  holdMs?: number;
  /** Held bytes that go out first, on their own, rather than make one batch larger than this. */
  maxHeldBytes?: number;
  /** Applied to every result before it is serialized (the attempt's secret redactor). */
  redact?: (result: ResultBody) => ResultBody;
  /** Largest message `publish` sends (MAX_RESULT_MESSAGE_BYTES). */
  maxMessageBytes?: number;
}

export const DEFAULT_HOLD_MS = 5;
/** Half the bus's largest publish request, a quarter of the broker's default largest batch. */
export const DEFAULT_MAX_HELD_BYTES = 256 * 1024;

/**
 * Publishes one attempt's results to its sink (`flostra.results.v1`, or the ingestor of this
 * process), keyed by executionId so they stay in order. `publish` resolves only once the sink
 * took them (the broker acknowledged, or the ingestor handled them); a rejection is never
 * swallowed (promise 6, docs/architecture.md): it propagates to the DAG runner, which fails the
 * run visibly.
 *
 * Results of pure nodes may be `hold`-ed instead: they go out with the next `publish`, in the same
 * publish call and before its result, so one batch of one partition carries them together (all
 * appended or none) — for a graph of pure nodes, every node result travels with the attempt's
 * terminal result. Held results not taken along within `holdMs` go out alone; a later `publish`
 * waits for their acknowledgement first, and if they failed it rejects with that failure (once)
 * and drops what was held after them.
 */
export class ResultPublisher {
  private sequence = 0;
  private held: OutgoingMessage[] = [];
  private heldBytes = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** A flush of held results in flight; it never rejects, its failure is kept in `failure`. */
  private flushing: Promise<void> | undefined;
  private failure: { error: unknown } | undefined;
  private readonly holdMs: number;
  private readonly maxHeldBytes: number;
  private readonly redact: (result: ResultBody) => ResultBody;
  private readonly maxMessageBytes: number;

  constructor(
    private readonly sink: ResultSink,
    private readonly fence: { executionId: string; attemptId: string; workerId: string; fencingToken: number },
    options: ResultPublisherOptions = {},
  ) {
    this.holdMs = options.holdMs ?? DEFAULT_HOLD_MS;
    this.maxHeldBytes = options.maxHeldBytes ?? DEFAULT_MAX_HELD_BYTES;
    this.redact = options.redact ?? ((result) => result);
    this.maxMessageBytes = options.maxMessageBytes ?? MAX_RESULT_MESSAGE_BYTES;
  }

  /** Keeps `result` to travel with the next published one (or alone, within `holdMs`). Never throws. */
  hold(result: ResultBody): void {
    const message = this.message(result);
    const bytes = Buffer.byteLength(message.value);
    if (this.held.length > 0 && this.heldBytes + bytes > this.maxHeldBytes) this.flush();
    this.held.push(message);
    this.heldBytes += bytes;
    this.timer ??= setTimeout(() => this.flush(), this.holdMs);
  }

  /**
   * Publishes every held result, then `result`; resolves once all of them were acknowledged.
   * Rejects with ResultTooLargeError, having sent nothing and kept what is held, when `result`
   * would not fit in one message.
   */
  async publish(result: ResultBody): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    if (this.failure !== undefined) {
      // What was held after the lost results must not land without them.
      const { error } = this.failure;
      this.failure = undefined;
      this.take();
      throw error;
    }
    const message = this.message(result, this.maxMessageBytes);
    if (this.held.length > 0 && this.heldBytes + Buffer.byteLength(message.value) > this.maxHeldBytes) {
      await this.send(this.take());
    }
    await this.send([...this.take(), message]);
  }

  /** Drops held results and their timer: the attempt ended with nothing more to report. */
  discard(): void {
    this.take();
  }

  private flush(): void {
    const messages = this.take();
    if (messages.length === 0) return;
    const previous = this.flushing ?? Promise.resolve();
    const flushing = previous
      .then(() => (this.failure === undefined ? this.send(messages) : undefined))
      .catch((error: unknown) => void (this.failure ??= { error }))
      .finally(() => {
        if (this.flushing === flushing) this.flushing = undefined;
      });
    this.flushing = flushing;
  }

  private take(): OutgoingMessage[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    const messages = this.held;
    this.held = [];
    this.heldBytes = 0;
    return messages;
  }

  private send(messages: OutgoingMessage[]): Promise<void> {
    return this.sink.send(messages);
  }

  /** The message of the next result; one over `maxBytes` is refused and takes no sequence number. */
  private message(result: ResultBody, maxBytes = Infinity): OutgoingMessage {
    const sequence = this.sequence;
    const message = {
      // Deterministic: a re-publish of the same result after a lost ack carries the same id.
      messageId: uuidV5(`${this.fence.attemptId}:${this.fence.fencingToken}:result:${sequence}`),
      ...this.fence,
      sequence,
      ...this.redact(result),
    };
    const value = JSON.stringify(message);
    if (maxBytes !== Infinity) {
      const bytes = Buffer.byteLength(value);
      if (bytes > maxBytes) throw new ResultTooLargeError(result.kind, bytes, maxBytes);
    }
    this.sequence++;
    // The trace context of the attempt travels to the ingestor, which appends in its trace.
    const headers = { ...traceMessageHeaders(currentTraceHeaders()), [PRODUCED_AT_HEADER]: String(Date.now()) };
    return { key: this.fence.executionId, value, headers };
  }
}
