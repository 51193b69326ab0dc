import { systemActor } from '../../core/actors.js';
import { CatchUpRunner } from '../../core/catch-up-runner.js';
import type { Clock } from '../../core/clock.port.js';
import type { BatchVerdict } from '../../core/command-handler.js';
import { InvalidStateError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import type { EventStore, RecordedEvent } from '../../core/event-store.port.js';
import type { IdGenerator } from '../../core/ids.js';
import type { Logger } from '../../core/logger.js';
import type { ExecutionStreams } from '../../executions/application/execution-streams.js';
import { parseExecutionEvent } from '../../executions/domain/execution-event.parser.js';
import type { ExecutionEvent } from '../../executions/domain/execution.events.js';
import { realLeaseTime } from '../../core/leadership.js';
import { type CheckpointStore, CheckpointThrottle } from '../../postgres/checkpoint-store.js';
import type { SqlClient } from '../../postgres/sql-client.port.js';
import type { DueTimer, TimerTable } from '../infrastructure/timer-table.js';
import { planTimers } from './timer-plan.js';

export interface TimerServiceDeps {
  store: EventStore;
  executions: Pick<ExecutionStreams, 'handleBatch' | 'prefetch'>;
  /** The read-model Postgres: the table of live timers and the checkpoint commit in one of its transactions. */
  sql: SqlClient;
  checkpoints: CheckpointStore;
  timers: TimerTable;
  /** What "due" means: injectable, so tests move time instead of waiting. */
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
}

export interface TimerServiceOptions {
  /** Checkpoint name of the subscription that keeps the table. */
  name?: string;
  batchSize?: number;
  /** How long a short batch of events waits for more to share its transaction. */
  gatherMs?: number;
  /** Longest sleep between looks when nothing is due sooner (other processes' timers are seen then). */
  idleMs?: number;
  /** Timers claimed per look, and how many fire at once. */
  dueBatchSize?: number;
  concurrency?: number;
  /** How long a claim keeps other timer processes off a row. */
  claimMs?: number;
  /** Backoff of a timer whose firing keeps failing. */
  backoff?: { initialMs: number; maxMs: number };
  /**
   * How far ahead of their due time the loop reads the executions of coming timers (0: never),
   * so that firing them decides on states in memory instead of reading each first.
   */
  prepareMs?: number;
  /** Most executions read ahead at once: no more than the process's state cache keeps (10,000). */
  prepareLimit?: number;
}

/**
 * The `timer` role: fires durable timers (a `delay` node's, a `wait_signal` node's time limit)
 * when due. A checkpointed subscription of the log keeps `timers_due`; a loop claims the due rows,
 * fires each by command (`FireTimer`, decided on the execution's stream with its expected
 * revision, so a timer fires once however many processes race; the timers of one execution in
 * one append, the states of the batch read together), and sleeps until the next due
 * time (at most `idleMs`), woken early when this process records a timer due sooner. A timer due
 * long ago (the role was down) fires at once, and its event records how late. Before it sleeps,
 * the loop reads ahead the executions of timers due within `prepareMs` into the process's state
 * cache: a burst of timers due together then fires without reading their histories first.
 */
export class TimerService {
  private readonly options: Required<TimerServiceOptions>;
  private readonly throttle = new CheckpointThrottle();
  /** Keeps the table from the log and runs the loop; its time is the clock's, as due times are. */
  private readonly runner: CatchUpRunner;
  /**
   * The timers of the round under way: their rows are this round's to remove (it settles every
   * row it claimed: fired, stale, or kept for later), so the table's keeper leaves them alone.
   */
  private readonly claimed = new Set<string>();
  /** When (clock time) the loop last read ahead: at most once per `idleMs`. */
  private preparedAtMs = Number.NEGATIVE_INFINITY;
  /** The soonest due time recorded while a read-ahead runs: it stops in time to fire that one. */
  private recordedDueMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly deps: TimerServiceDeps,
    options: TimerServiceOptions = {},
  ) {
    this.options = {
      name: 'timers',
      batchSize: 1_000,
      gatherMs: 10,
      idleMs: 1_000,
      dueBatchSize: 1_000,
      concurrency: 128,
      claimMs: 30_000,
      backoff: { initialMs: 1_000, maxMs: 60_000 },
      prepareMs: 5_000,
      prepareLimit: 10_000,
      ...options,
    };
    // The feed's name, batchSize, gatherMs, store and checkpoints: the options and deps of those names.
    this.runner = new CatchUpRunner({
      feed: { ...this.options, ...deps, streamPrefixes: ['execution-'], handle: (batch) => this.track(batch), throttle: this.throttle },
      loop: {
        round: (signal) => this.round(signal),
        onError: (error, failures) => deps.logger.warn('timer loop failed; retrying', { err: error, failures }),
      },
      logger: deps.logger,
      time: { now: () => deps.clock.now().getTime(), sleep: realLeaseTime.sleep },
    });
  }

  start(): void {
    this.runner.start();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
  }

  /** Applies one batch of execution events to the table, with the checkpoint, in one transaction. */
  async track(batch: readonly RecordedEvent[]): Promise<void> {
    const last = batch[batch.length - 1];
    if (last === undefined) return;
    const planned = planTimers(
      batch.map((recorded) => ({ executionId: recorded.streamId.slice('execution-'.length), event: parseExecutionEvent(recorded) })),
    );
    // A timer this process's round fired leaves with the round's own delete: one statement for
    // the round's rows, instead of one more per batch of the log that recorded their firings.
    const plan = { ...planned, removals: planned.removals.filter((timerId) => !this.claimed.has(timerId)) };
    const changes = plan.upserts.length + plan.removals.length;
    if (!this.throttle.shouldSave(changes > 0, last.position)) return;
    await this.deps.sql.transaction(
      // Queued writes only: BEGIN, the writes and COMMIT leave together.
      async (tx) => {
        this.deps.timers.apply(plan, tx);
        await this.deps.checkpoints.save(this.options.name, last.position, tx);
      },
      { asynchronousCommit: true },
    );
    // A timer due sooner than the loop's sleep ends wakes it (and ends a read-ahead under way in time).
    const soonestMs = Math.min(...plan.upserts.map((u) => u.dueMs));
    this.recordedDueMs = Math.min(this.recordedDueMs, soonestMs);
    this.runner.wake(soonestMs);
  }

  /** Claims and fires the timers due now (one bounded batch); returns how many were claimed. */
  async fireDue(): Promise<number> {
    const due = await this.deps.timers.claimDue(this.deps.clock.now().getTime(), this.options.dueBatchSize, this.options.claimMs);
    for (const timer of due) this.claimed.add(timer.timerId);
    try {
      return await this.fireClaimed(due);
    } finally {
      // A row left behind (a failed delete, a crash) is claimed again once its claim runs out,
      // and its timer, fired already or stale, settles then.
      for (const timer of due) this.claimed.delete(timer.timerId);
    }
  }

  /** Fires a claimed batch; returns how many were claimed. */
  private async fireClaimed(due: DueTimer[]): Promise<number> {
    // The timers of one execution fire together, in one append: never two firings racing on its stream.
    const groups = [...groupBy(due, (timer) => timer.executionId).values()];
    // Their states in a few reads, not one read per execution (after a long wait none is cached),
    // `concurrency` streams per read. The reads go out together: no other role's statements come
    // between them, and with the database on a thread of its own none waits for this one to send it.
    await this.readAll(groups.map((timers) => timers[0].executionId)).catch((error: unknown) =>
      this.deps.logger.warn('reading due executions failed; each firing reads its own', { err: error }),
    );
    const settled: DueTimer[] = [];
    let next = 0;
    // Many executions at once: the store commits their appends in groups.
    await Promise.all(
      Array.from({ length: Math.min(this.options.concurrency, groups.length) }, async () => {
        while (next < groups.length) settled.push(...(await this.fire(groups[next++])));
      }),
    );
    // Fired, or nothing left to fire: their rows go in one statement.
    await this.deps.timers.removeAll(settled);
    return due.length;
  }

  /** Folds the executions not cached yet, `concurrency` streams per read, the reads sent together. */
  private async readAll(executionIds: readonly string[]): Promise<void> {
    const reads: Promise<void>[] = [];
    for (let i = 0; i < executionIds.length; i += this.options.concurrency) {
      reads.push(this.deps.executions.prefetch(executionIds.slice(i, i + this.options.concurrency)));
    }
    await Promise.all(reads);
  }

  /**
   * Reads ahead the executions of the timers due within `prepareMs` that no process holds (at most
   * `prepareLimit`, soonest first), a claim's worth at a time, and stops once the soonest of them,
   * or of the timers recorded meanwhile, is due, or the role stops: firing comes first. Only a
   * hint, as any cached state: a state another process moves meanwhile makes the firing's append
   * conflict and read again. Returns how many executions it looked at.
   */
  async prepare(signal?: AbortSignal): Promise<number> {
    const nowMs = this.deps.clock.now().getTime();
    this.preparedAtMs = nowMs;
    this.recordedDueMs = Number.POSITIVE_INFINITY;
    const coming = await this.deps.timers.coming(nowMs, nowMs + this.options.prepareMs, this.options.prepareLimit);
    const executionIds = [...new Set(coming.map((timer) => timer.executionId))];
    const dueMs = coming[0]?.dueMs ?? Number.POSITIVE_INFINITY;
    let looked = 0;
    while (
      looked < executionIds.length &&
      signal?.aborted !== true &&
      this.deps.clock.now().getTime() < Math.min(dueMs, this.recordedDueMs)
    ) {
      const chunk = executionIds.slice(looked, looked + this.options.dueBatchSize);
      await this.readAll(chunk);
      looked += chunk.length;
    }
    return looked;
  }

  /**
   * Fires the due timers of one execution in one append; returns those fired (or with nothing
   * left to fire). The others were deferred or backed off.
   */
  private async fire(timers: readonly DueTimer[]): Promise<DueTimer[]> {
    const executionId = timers[0].executionId;
    const now = this.deps.clock.now();
    let verdicts: BatchVerdict<ExecutionEvent>[];
    try {
      ({ verdicts } = await this.deps.executions.handleBatch(
        executionId,
        timers.map((timer) => ({
          type: 'FireTimer',
          data: { timerId: timer.timerId, nextAttemptId: this.deps.ids.uuid(), jitter: Math.random() },
          metadata: { now, actor: systemActor('timer') },
        })),
      ));
    } catch (error) {
      // Nothing of this execution was written: each timer tries again later, later each time.
      await Promise.all(timers.map((timer) => this.backOff(timer, error)));
      return [];
    }
    const settled: DueTimer[] = [];
    await Promise.all(
      timers.map(async (timer, index) => {
        const verdict = verdicts[index];
        if ('events' in verdict) {
          if (verdict.events.length > 0) this.deps.logger.debug('timer fired', { executionId, timerId: timer.timerId });
          settled.push(timer);
          return;
        }
        const error = verdict.rejected;
        const notDueUntil = error instanceof InvalidStateError ? error.details?.['deadline'] : undefined;
        if (typeof notDueUntil === 'string') await this.deps.timers.defer(timer, Date.parse(notDueUntil));
        // Cancelled, or its execution ended: nothing left to fire.
        else if (error instanceof StaleAttemptError || error instanceof NotFoundError) settled.push(timer);
        else await this.backOff(timer, error);
      }),
    );
    return settled;
  }

  /** Firing failed: the row waits, longer after each failure. */
  private async backOff(timer: DueTimer, error: unknown): Promise<void> {
    const { initialMs, maxMs } = this.options.backoff;
    const delayMs = Math.min(maxMs, initialMs * 2 ** timer.failures);
    this.deps.logger.warn('firing a timer failed; backing off', { err: error, timerId: timer.timerId, retryInMs: delayMs });
    await this.deps.timers.backOff(timer, this.deps.clock.now().getTime() + delayMs);
  }

  /** A timer comes due within `prepareMs`, and the loop has not read ahead within `idleMs`. */
  private shouldPrepare(nextDueMs: number): boolean {
    const nowMs = this.deps.clock.now().getTime();
    return (
      this.options.prepareMs > 0 &&
      nextDueMs > nowMs &&
      nextDueMs - nowMs <= this.options.prepareMs &&
      nowMs - this.preparedAtMs >= this.options.idleMs
    );
  }

  /** One look: fires what is due; resolves to how long to sleep (until the next due time, at most `idleMs`). */
  private async round(signal: AbortSignal): Promise<number> {
    // A full batch means more may be due: look again at once.
    if ((await this.fireDue()) === this.options.dueBatchSize) return 0;
    const next = await this.deps.timers.nextDueMs();
    if (next !== null && this.shouldPrepare(next)) {
      await this.prepare(signal).catch((error: unknown) =>
        this.deps.logger.warn('reading coming timers ahead failed; they fire all the same', { err: error }),
      );
    }
    const untilNext = next === null ? this.options.idleMs : next - this.deps.clock.now().getTime();
    return Math.max(0, Math.min(this.options.idleMs, untilNext));
  }
}

/** `Map.groupBy` (Node.js 21+), in first-seen order. */
function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}
