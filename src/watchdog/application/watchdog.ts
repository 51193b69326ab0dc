import { systemActor } from '../../core/actors.js';
import { CatchUpRunner } from '../../core/catch-up-runner.js';
import type { Clock } from '../../core/clock.port.js';
import { InvalidStateError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import type { EventStore, RecordedEvent } from '../../core/event-store.port.js';
import type { IdGenerator } from '../../core/ids.js';
import type { Logger } from '../../core/logger.js';
import type { ExecutionStreams } from '../../executions/application/execution-streams.js';
import { parseExecutionEvent } from '../../executions/domain/execution-event.parser.js';
import type { ExecutionCommand } from '../../executions/domain/execution.commands.js';
import { isFinal } from '../../executions/domain/execution.state.js';
import { executionDeadline } from '../../executions/domain/time-out-execution.js';
import { type CheckpointStore, CheckpointThrottle } from '../../postgres/checkpoint-store.js';
import type { SqlClient } from '../../postgres/sql-client.port.js';
import type { DeadlineTable, DueDeadline, DueTaskDeadline } from '../infrastructure/deadline-table.js';
import { planDeadlines } from './deadline-plan.js';

export interface WatchdogDeps {
  store: EventStore;
  executions: Pick<ExecutionStreams, 'handle' | 'load'>;
  /** The read-model Postgres: deadlines and the checkpoint commit in one of its transactions. */
  sql: SqlClient;
  checkpoints: CheckpointStore;
  deadlines: DeadlineTable;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
}

export interface WatchdogOptions {
  name?: string;
  batchSize?: number;
  /**
   * While events stream in, how long a short batch waits for more to share its transaction
   * (see gatherBatches); default 100 ms, less than one `tickMs`. A deadline is then recorded up
   * to this much later, far inside any lease, and an attempt that ends within the window never
   * costs a deadline row at all.
   */
  gatherMs?: number;
  /** How often due deadlines are looked for. */
  tickMs?: number;
  /** Deadlines fired per look, and how many at once. */
  dueBatchSize?: number;
  concurrency?: number;
  /** Backoff of a deadline whose firing keeps failing. */
  backoff?: { initialMs: number; maxMs: number };
}

/**
 * Turns expired leases, queue deadlines and execution deadlines into commands (docs/architecture.md,
 * "watchdog"). The deadlines come from a checkpointed subscription; the decider has the last
 * word on whether one really passed, so a heartbeat that wins the race keeps its attempt.
 */
export class Watchdog {
  private readonly options: Required<WatchdogOptions>;
  /** Keeps the deadlines from the log and looks for due ones every `tickMs`. */
  private readonly runner: CatchUpRunner;

  constructor(
    private readonly deps: WatchdogDeps,
    options: WatchdogOptions = {},
  ) {
    this.options = {
      name: 'watchdog',
      batchSize: 500,
      gatherMs: 100,
      tickMs: 250,
      dueBatchSize: 100,
      concurrency: 8,
      backoff: { initialMs: 1_000, maxMs: 60_000 },
      ...options,
    };
    // The feed's name, batchSize, gatherMs, store and checkpoints: the options and deps of those names.
    this.runner = new CatchUpRunner({
      feed: { ...this.options, ...deps, streamPrefixes: ['execution-'], handle: (batch) => this.track(batch), throttle: this.throttle },
      loop: {
        // A full batch means more may be due: look again at once.
        round: async () => ((await this.fireDue()) === this.options.dueBatchSize ? 0 : this.options.tickMs),
        onError: (error, failures) => deps.logger.warn('watchdog timer failed; retrying', { err: error, failures }),
        backoff: { initialMs: 2 * this.options.tickMs, maxMs: 5_000 },
      },
      logger: deps.logger,
    });
  }

  start(): void {
    this.runner.start();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
  }

  private readonly throttle = new CheckpointThrottle();

  /** Applies one batch of execution events to the deadlines, with the checkpoint, in one transaction. */
  async track(batch: readonly RecordedEvent[]): Promise<void> {
    const events = batch.map((recorded) => ({
      executionId: recorded.streamId.slice('execution-'.length),
      event: parseExecutionEvent(recorded),
    }));
    // A redrive starts a new run whose deadline depends on the workflow: read it from the
    // stream, outside the transaction (in embedded mode both share one PGlite connection).
    const runDeadlines = new Map<string, number | null>();
    for (const { executionId, event } of events) {
      if (event.type !== 'RedriveRequested' || runDeadlines.has(executionId)) continue;
      const { state } = await this.deps.executions.load(executionId);
      runDeadlines.set(executionId, isFinal(state) ? null : Date.parse(executionDeadline(state)));
    }
    const plan = planDeadlines(events, runDeadlines);
    const last = batch[batch.length - 1];
    if (last === undefined) return;
    const changes = plan.upserts.length + plan.removals.length + plan.taskUpserts.length + plan.taskRemovals.length;
    if (!this.throttle.shouldSave(changes > 0, last.position)) return;
    // Deadlines and checkpoint are derived from the log: a crash may lose both, never one. They
    // lie a lease or more ahead, so recording them can wait for an embedded database to be free.
    await this.deps.sql.transaction(
      // Queued writes only: with BEGIN and COMMIT, one round trip.
      async (tx) => {
        this.deps.deadlines.apply(plan, tx);
        this.deps.deadlines.applyTasks(plan, tx);
        await this.deps.checkpoints.save(this.options.name, last.position, tx);
      },
      { asynchronousCommit: true, background: true },
    );
  }

  /** Fires every deadline due now (bounded batches); returns how many were fired. */
  async fireDue(): Promise<number> {
    const now = this.deps.clock.now().getTime();
    const [due, dueTasks] = await Promise.all([
      this.deps.deadlines.due(now, this.options.dueBatchSize),
      this.deps.deadlines.dueTasks(now, this.options.dueBatchSize),
    ]);
    const firings = [...due.map((deadline) => () => this.fire(deadline)), ...dueTasks.map((deadline) => () => this.fireTask(deadline))];
    for (let i = 0; i < firings.length; i += this.options.concurrency) {
      await Promise.all(firings.slice(i, i + this.options.concurrency).map((fire) => fire()));
    }
    return Math.max(due.length, dueTasks.length);
  }

  /** A claimed task past its lease or timeout times out by command; the decider refuses if a heartbeat moved the lease. */
  private async fireTask(deadline: DueTaskDeadline): Promise<void> {
    const metadata = { now: this.deps.clock.now(), actor: systemActor('watchdog') };
    try {
      const outcome = await this.deps.executions.handle(deadline.executionId, {
        type: 'TimeOutTask',
        data: { taskId: deadline.taskId, nextAttemptId: this.deps.ids.uuid(), jitter: Math.random() },
        metadata,
      });
      if (outcome.appended) this.deps.logger.info('task deadline passed', { executionId: deadline.executionId, taskId: deadline.taskId });
      await this.deps.deadlines.removeTask(deadline);
    } catch (error) {
      const notDueUntil = error instanceof InvalidStateError ? error.details?.['deadline'] : undefined;
      if (typeof notDueUntil === 'string') return this.deps.deadlines.deferTask(deadline, Date.parse(notDueUntil));
      if (error instanceof StaleAttemptError || error instanceof NotFoundError) return this.deps.deadlines.removeTask(deadline);
      const { initialMs, maxMs } = this.options.backoff;
      const delayMs = Math.min(maxMs, initialMs * 2 ** deadline.failures);
      this.deps.logger.warn('firing a task deadline failed; backing off', { err: error, taskId: deadline.taskId, retryInMs: delayMs });
      await this.deps.deadlines.backOffTask(deadline, this.deps.clock.now().getTime() + delayMs);
    }
  }

  private async fire(deadline: DueDeadline): Promise<void> {
    const metadata = { now: this.deps.clock.now(), actor: systemActor('watchdog') };
    const command: ExecutionCommand =
      deadline.kind === 'attempt'
        ? {
            type: 'TimeOutAttempt',
            data: { attemptId: deadline.attemptId!, nextAttemptId: this.deps.ids.uuid(), jitter: Math.random() },
            metadata,
          }
        : { type: 'TimeOutExecution', data: {}, metadata };
    try {
      // Promise 4 (docs/architecture.md), its watchdog half: an attempt nobody claimed by its queue deadline, or whose
      // lease ran out, times out by command; the decider refuses if a heartbeat moved the lease.
      const outcome = await this.deps.executions.handle(deadline.executionId, command);
      if (outcome.appended)
        this.deps.logger.info('deadline passed', { executionId: deadline.executionId, kind: deadline.kind, attemptId: deadline.attemptId });
      await this.deps.deadlines.remove(deadline);
    } catch (error) {
      const notDueUntil = error instanceof InvalidStateError ? error.details?.['deadline'] : undefined;
      if (typeof notDueUntil === 'string') return this.deps.deadlines.defer(deadline, Date.parse(notDueUntil));
      // The attempt ended or was superseded: there is nothing left to time out.
      if (error instanceof StaleAttemptError || error instanceof NotFoundError) return this.deps.deadlines.remove(deadline);
      const { initialMs, maxMs } = this.options.backoff;
      const delayMs = Math.min(maxMs, initialMs * 2 ** deadline.failures);
      this.deps.logger.warn('firing a deadline failed; backing off', {
        err: error,
        executionId: deadline.executionId,
        kind: deadline.kind,
        retryInMs: delayMs,
      });
      await this.deps.deadlines.backOff(deadline, this.deps.clock.now().getTime() + delayMs);
    }
  }
}
