import { type Bus, type OutgoingMessage, TOPICS } from '../../core/bus.port.js';
import { CatchUpRunner } from '../../core/catch-up-runner.js';
import type { Clock } from '../../core/clock.port.js';
import { traceMessageHeaders } from '../../core/traceparent.js';
import { realLeaseTime } from '../../core/leadership.js';
import type { EventStore, Position, RecordedEvent } from '../../core/event-store.port.js';
import type { Logger } from '../../core/logger.js';
import { NO_METRICS, type Metrics } from '../../core/metrics.port.js';
import { contextFrom, failSpan, type Span, SpanKind, startSpan, traceHeadersOfSpan } from '../../observability/tracing.js';
import { parseExecutionEvent } from '../../executions/domain/execution-event.parser.js';
import type { ExecutionEventOf } from '../../executions/domain/execution.events.js';
import { type CheckpointStore, CheckpointThrottle } from '../../postgres/checkpoint-store.js';
import type { SqlClient } from '../../postgres/sql-client.port.js';
import type { DispatchHandOver } from '../dispatch-hand-over.js';
import { type DispatchMessage, dispatchMessageId, toOutgoing } from '../dispatch-message.js';
import type { DispatchSchedule } from '../infrastructure/dispatch-schedule.js';
import type { UnclaimedDispatches } from '../infrastructure/unclaimed-dispatches.js';

/** Events after which an attempt no longer waits in the queue. */
const LEFT_THE_QUEUE = new Set(['AttemptClaimed', 'AttemptCancelled', 'AttemptTimedOut']);

export interface DispatcherDeps {
  store: EventStore;
  bus: Bus;
  /** The read-model Postgres: checkpoint and schedule commit in one of its transactions. */
  sql: SqlClient;
  checkpoints: CheckpointStore;
  schedule: DispatchSchedule;
  /** Present when the bus loses messages on a restart: unclaimed dispatches are sent again. */
  unclaimed?: UnclaimedDispatches;
  clock: Clock;
  logger: Logger;
  /** Dispatch lag is measured here (`flostra_dispatch_lag_seconds`). */
  metrics?: Pick<Metrics, 'dispatched'>;
  /** A worker of this process that takes dispatches in memory while it has room (see DispatchHandOver). */
  handOver?: Pick<DispatchHandOver, 'offer'>;
}

export interface DispatcherOptions {
  /** Checkpoint name; two dispatchers with one name share their progress. */
  name?: string;
  batchSize?: number;
  /**
   * Longest sleep between looks at the held-back dispatches when none falls due sooner: the
   * dispatcher wakes at the earliest one's time, and when it holds back one due sooner.
   */
  idleMs?: number;
  scheduleBatchSize?: number;
  /** Partitions of the dispatch topic when the dispatcher has to create it. */
  partitions?: number;
  /**
   * A dispatch handed over in process and still not claimed after this long is made durable:
   * published on a durable bus, or recorded as unclaimed. The checkpoint can then move past it.
   */
  handOverSpillMs?: number;
}

/** A dispatch a worker of this process took, not yet seen to leave the queue. */
interface HandedOver {
  message: DispatchMessage;
  /** The position of the event before its AttemptScheduled: the checkpoint may not move past it. */
  before: Position | null;
  /** When it was handed over (the clock's milliseconds). */
  at: number;
}

const EXECUTION_PREFIX = 'execution-';

/**
 * Turns every `AttemptScheduled` of the global log into one dispatch message (docs/architecture.md,
 * "dispatcher"). At-least-once: a restart re-reads from the checkpoint and may publish some
 * messages again; workers dedupe by claim. Dispatches whose `notBefore` lies ahead (a retry's
 * backoff) are held back in a table and published by the runner's loop when due.
 */
export class Dispatcher {
  private readonly options: Required<DispatcherOptions>;
  private readonly throttle = new CheckpointThrottle();
  /** Follows the log (the feed) and publishes held-back dispatches when due (the loop). */
  private readonly runner: CatchUpRunner;
  /** Handed over in process and not yet claimed, cancelled or timed out, in log order. */
  private readonly handedOver = new Map<string, HandedOver>();
  /** The position of the last event handled (or resumed after). */
  private lastPosition: Position | null = null;
  /** Attempts with a row in the unclaimed table (the in-process bus only): only their claims delete one. */
  private readonly unclaimedRows = new Set<string>();

  constructor(
    private readonly deps: DispatcherDeps,
    options: DispatcherOptions = {},
  ) {
    this.options = {
      name: 'dispatcher',
      batchSize: 500,
      idleMs: 1_000,
      scheduleBatchSize: 500,
      partitions: 12,
      handOverSpillMs: 10_000,
      ...options,
    };
    this.runner = new CatchUpRunner({
      feed: {
        name: this.options.name,
        store: deps.store,
        checkpoints: deps.checkpoints,
        streamPrefixes: [EXECUTION_PREFIX],
        batchSize: this.options.batchSize,
        handle: (batch) => this.dispatchBatch(batch),
        // What was handed over is read again from the checkpoint, which lies before all of it.
        onResume: async (after) => {
          this.handedOver.clear();
          this.lastPosition = after;
        },
        throttle: this.throttle,
      },
      loop: {
        round: () => this.round(),
        onError: (error, failures) => deps.logger.warn('publishing held-back dispatches failed; retrying', { err: error, failures }),
      },
      logger: deps.logger,
      // notBefore is the clock's time, as the due check is.
      time: { now: () => deps.clock.now().getTime(), sleep: realLeaseTime.sleep },
    });
  }

  async start(): Promise<void> {
    if (this.runner.started) return;
    await this.deps.bus.ensureTopics([{ topic: TOPICS.dispatch, partitions: this.options.partitions }]);
    const resend = (await this.deps.unclaimed?.all()) ?? [];
    for (const message of resend) this.unclaimedRows.add(message.attemptId);
    if (resend.length > 0) {
      await this.deps.bus.publish(
        TOPICS.dispatch,
        resend.map((message) => toOutgoing(message)),
      );
      this.deps.logger.info('sent unclaimed dispatches again after a restart', { count: resend.length });
    }
    this.runner.start();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
  }

  /**
   * One publish per batch; held-back retries and the checkpoint then commit together. A due
   * dispatch goes to a worker of this process when it takes it (see DispatchHandOver), else on
   * the bus.
   */
  async dispatchBatch(batch: readonly RecordedEvent[]): Promise<void> {
    const now = this.deps.clock.now().getTime();
    const due: DispatchMessage[] = [];
    const later: DispatchMessage[] = [];
    const left: string[] = [];
    // Attempts that leave the queue within this batch need no dispatch: someone already has
    // them (a batch read again after a restart is mostly such).
    const leftInBatch = new Set<string>();
    for (const recorded of batch)
      if (LEFT_THE_QUEUE.has(recorded.type)) leftInBatch.add((recorded.data as { attemptId: string }).attemptId);
    // Per due dispatch: when its AttemptScheduled was appended, and its span (a child of the
    // command's trace, which the event's metadata carries) whose context its headers carry.
    const sent: { recordedAt: number; span: Span }[] = [];
    const outgoing: OutgoingMessage[] = [];
    let previous = this.lastPosition;
    for (const recorded of batch) {
      const before = previous;
      previous = recorded.position;
      if (LEFT_THE_QUEUE.has(recorded.type)) {
        const { attemptId } = recorded.data as { attemptId: string };
        left.push(attemptId);
        this.handedOver.delete(attemptId);
      }
      if (recorded.type !== 'AttemptScheduled') continue;
      const event = parseExecutionEvent(recorded) as ExecutionEventOf<'AttemptScheduled'>;
      const message = await this.messageOf(recorded, event.data);
      if (Date.parse(message.notBefore) > now) {
        later.push(message);
        continue;
      }
      if (leftInBatch.has(message.attemptId)) continue;
      const span = startSpan('dispatch', {
        kind: SpanKind.PRODUCER,
        parent: contextFrom(recorded.metadata),
        attributes: { 'flostra.execution_id': message.executionId, 'flostra.attempt_id': message.attemptId },
      });
      const headers = traceHeadersOfSpan(span);
      if (this.deps.handOver?.offer(message, traceMessageHeaders(headers))) {
        this.handedOver.set(message.attemptId, { message, before, at: now });
        this.metrics.dispatched((Date.now() - Date.parse(recorded.recordedAt)) / 1000);
        span.end();
        continue;
      }
      due.push(message);
      sent.push({ recordedAt: Date.parse(recorded.recordedAt), span });
      outgoing.push(toOutgoing(message, headers));
    }
    if (outgoing.length > 0) await this.publishTraced(outgoing, sent);
    const last = batch[batch.length - 1];
    if (last === undefined) return;
    this.lastPosition = last.position;
    // The checkpoint stays before the oldest dispatch a worker of this process took and has not
    // claimed: it lives in memory only, and a restart must read its AttemptScheduled again.
    const oldest = this.handedOver.values().next().value;
    const safe = oldest === undefined ? last.position : oldest.before;
    // Dispatches the broker acked need no prompt checkpoint: after a crash they are sent again,
    // and a duplicate dispatch yields one claim. Only what is kept beside the checkpoint (held-back
    // dispatches, the unclaimed list) must commit with it now.
    const unclaimed = this.deps.unclaimed;
    const claimedRows = unclaimed ? left.filter((attemptId) => this.unclaimedRows.has(attemptId)) : [];
    const changed = later.length + (unclaimed ? due.length + claimedRows.length : 0) > 0;
    // No position to store (a dispatch handed over is the log's first event): what changed is
    // stored all the same, and the log is read from its start again after a restart.
    const save = safe !== null && this.throttle.shouldSave(changed, safe);
    if (!save && !changed) return;
    // Promise 1 (docs/architecture.md): the log is the outbox. The checkpoint moves only once the broker acked this
    // batch's dispatches and the held-back ones are stored, so no crash can lose one.
    // What this records is derived from the log after the checkpoint: a crash may lose it
    // together with the checkpoint, and the batch is dispatched again. The statements go out
    // together, in this order (an attempt claimed within the batch is added, then removed).
    await this.deps.sql.transaction(
      async (tx) => {
        await Promise.all([
          this.deps.schedule.add(later, tx),
          unclaimed?.add(due, tx),
          unclaimed?.remove(claimedRows, tx),
          save ? this.deps.checkpoints.save(this.options.name, safe, tx) : undefined,
        ]);
      },
      { asynchronousCommit: true },
    );
    if (unclaimed) {
      for (const message of due) this.unclaimedRows.add(message.attemptId);
      for (const attemptId of claimedRows) this.unclaimedRows.delete(attemptId);
    }
    // A dispatch held back to before the loop's next look wakes it.
    if (later.length > 0) this.runner.wake(Math.min(...later.map((message) => Date.parse(message.notBefore))));
  }

  /**
   * Makes durable what a worker of this process took but has not claimed within
   * `handOverSpillMs` (its claim waits, or it stopped): sent on a durable bus, or recorded as
   * unclaimed. The checkpoint may then move past it; the worker may still run it, and one claim
   * wins. Returns how many.
   */
  async spillHandedOver(): Promise<number> {
    const cutoff = this.deps.clock.now().getTime() - this.options.handOverSpillMs;
    const stale: DispatchMessage[] = [];
    for (const entry of this.handedOver.values()) if (entry.at <= cutoff) stale.push(entry.message);
    if (stale.length === 0) return 0;
    const { unclaimed } = this.deps;
    if (unclaimed) {
      await this.deps.sql.transaction((tx) => unclaimed.add(stale, tx));
      for (const message of stale) this.unclaimedRows.add(message.attemptId);
    } else {
      await this.deps.bus.publish(
        TOPICS.dispatch,
        stale.map((message) => toOutgoing(message)),
      );
    }
    for (const message of stale) this.handedOver.delete(message.attemptId);
    this.deps.logger.info('dispatches handed over in process and not claimed yet were made durable', { count: stale.length });
    return stale.length;
  }

  /** Publishes held-back dispatches whose time has come; returns how many. */
  async publishDue(): Promise<number> {
    let published = 0;
    for (;;) {
      const due = await this.deps.schedule.due(this.deps.clock.now(), this.options.scheduleBatchSize);
      if (due.length === 0) return published;
      await this.deps.bus.publish(
        TOPICS.dispatch,
        due.map((message) => toOutgoing(message)),
      );
      const acked = Date.now();
      for (const message of due) this.metrics.dispatched((acked - Date.parse(message.notBefore)) / 1000);
      // Recorded as unclaimed, then deleted, only after the ack: a crash in between publishes
      // them again, never loses them.
      if (this.deps.unclaimed) {
        await this.deps.sql.transaction((tx) => this.deps.unclaimed!.add(due, tx));
        for (const message of due) this.unclaimedRows.add(message.attemptId);
      }
      await this.deps.schedule.remove(due.map((m) => m.messageId));
      published += due.length;
      if (due.length < this.options.scheduleBatchSize) return published;
    }
  }

  private get metrics(): Pick<Metrics, 'dispatched'> {
    return this.deps.metrics ?? NO_METRICS;
  }

  /** Publishes dispatches; their spans end with the broker's answer, their lag is measured at its ack. */
  private async publishTraced(outgoing: OutgoingMessage[], sent: readonly { recordedAt: number; span: Span }[]): Promise<void> {
    try {
      await this.deps.bus.publish(TOPICS.dispatch, outgoing);
    } catch (error) {
      for (const { span } of sent) {
        failSpan(span, error);
        span.end();
      }
      throw error;
    }
    const acked = Date.now();
    for (const { recordedAt, span } of sent) {
      this.metrics.dispatched((acked - recordedAt) / 1000);
      span.end();
    }
  }

  /** Publishes what is due; sleeps until the next held-back dispatch is due (at most `idleMs`). */
  private async round(): Promise<number> {
    await this.publishDue();
    await this.spillHandedOver();
    const next = await this.deps.schedule.nextDue();
    const untilNext = next === null ? this.options.idleMs : next.getTime() - this.deps.clock.now().getTime();
    return Math.max(0, Math.min(this.options.idleMs, untilNext));
  }

  private async messageOf(recorded: RecordedEvent, data: ExecutionEventOf<'AttemptScheduled'>['data']): Promise<DispatchMessage> {
    const executionId =
      typeof recorded.metadata['executionId'] === 'string'
        ? recorded.metadata['executionId']
        : recorded.streamId.slice(EXECUTION_PREFIX.length);
    const workspaceId =
      typeof recorded.metadata['workspaceId'] === 'string' ? recorded.metadata['workspaceId'] : await this.workspaceOf(recorded.streamId);
    return {
      messageId: dispatchMessageId(data.attemptId),
      executionId,
      attemptId: data.attemptId,
      attemptNumber: data.attemptNumber,
      workspaceId,
      queueDeadline: data.queueDeadline,
      notBefore: data.notBefore,
    };
  }

  /** Events appended before workspaceId rode in their metadata: ask the stream's first event. */
  private async workspaceOf(streamId: string): Promise<string> {
    const [first] = await this.deps.store.readStream(streamId, { maxCount: 1 });
    const event = first ? parseExecutionEvent(first) : undefined;
    if (event?.type !== 'ExecutionStarted') throw new Error(`stream ${streamId} does not start with ExecutionStarted`);
    return event.data.workspaceId;
  }
}
