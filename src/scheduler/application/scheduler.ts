import { scheduleActor } from '../../core/actors.js';
import { CatchUpRunner } from '../../core/catch-up-runner.js';
import type { Principal } from '../../auth/principal.js';
import type { Clock } from '../../core/clock.port.js';
import { DomainError, NotFoundError, WrongExpectedRevisionError } from '../../core/errors.js';
import type { EventStore, RecordedEvent } from '../../core/event-store.port.js';
import type { Logger } from '../../core/logger.js';
import { LruSet } from '../../core/lru-set.js';
import type { ExecutionStreams } from '../../executions/application/execution-streams.js';
import { StartExecutionCommand, type StartExecutionResult } from '../../executions/application/start-execution.handler.js';
import { isFinal } from '../../executions/domain/execution.state.js';
import type { ScheduleStreams } from '../../schedules/application/schedule-streams.js';
import { nextFireTime } from '../../schedules/domain/cron.js';
import { fireCursor, scheduleDecider, type ScheduleState, type StartedFire } from '../../schedules/domain/schedule.decider.js';
import { parseScheduleEvent } from '../../schedules/domain/schedule.events.js';
import { SCHEDULE_STREAM_PREFIX } from '../../schedules/domain/schedule-identity.js';

export interface SchedulerDeps {
  store: Pick<EventStore, 'subscribeToAll'>;
  schedules: Pick<ScheduleStreams, 'read' | 'trigger' | 'failFire'>;
  executions: Pick<ExecutionStreams, 'load'>;
  /** The start command's handler: quotas, secrets, audit metadata and idempotency as for a start over HTTP. */
  start: (command: StartExecutionCommand) => Promise<StartExecutionResult>;
  clock: Clock;
  logger: Logger;
}

export interface SchedulerOptions {
  /** Longest sleep between two looks at the clock: bounds how late a clock jump or a waiting fire is noticed. */
  maxSleepMs?: number;
  /** How long after another process fired a schedule this one checks that the fire's executions were started. */
  verifyAfterMs?: number;
}

/** A schedule as this process follows it from the log. */
interface Followed {
  workspaceId: string;
  name: string;
  state: ScheduleState;
  /** The stream revision `state` includes. */
  revision: number;
  /** When its next fire time is due (ms); null: never (paused, deleted, or a cron that fires no more). */
  dueAt: number | null;
  /** When to check that the latest decision's executions were started (a fire appended by another process). */
  verifyAt: number | null;
}

/** Executions this process knows were started: their fires need no check. */
const KNOWN_STARTED = 10_000;

/**
 * The scheduler role (docs/architecture.md, "Schedules"). It follows the `schedule-` streams of
 * the log into memory (no polling of a database) and sleeps until the earliest due fire time
 * (at most `maxSleepMs`, and a new schedule event wakes it at once). For a due schedule it reads
 * the stream, makes sure the executions of the latest decision were started, looks at whether
 * the last execution still runs, and appends the decision with the stream's expected revision:
 * any number of schedulers may race, and each fire time is decided once. Then it starts the
 * fired executions through the start command; their ids are derived from the fire, so a start
 * repeated by another scheduler (or after a crash) is a replay.
 */
export class Scheduler {
  private readonly options: Required<SchedulerOptions>;
  private readonly followed = new Map<string, Followed>();
  private readonly started = new LruSet(KNOWN_STARTED);
  /** Follows the schedule streams from the start of the log (no checkpoint: what it folds lives in memory) and runs the ticks. */
  private readonly runner: CatchUpRunner;

  constructor(
    private readonly deps: SchedulerDeps,
    options: SchedulerOptions = {},
  ) {
    this.options = { maxSleepMs: options.maxSleepMs ?? 1_000, verifyAfterMs: options.verifyAfterMs ?? 5_000 };
    // A failed subscription starts again from the start of the log; what it folded stays.
    this.runner = new CatchUpRunner({
      feed: { name: 'scheduler', store: deps.store, streamPrefixes: [SCHEDULE_STREAM_PREFIX], handle: (batch) => this.observe(batch) },
      loop: {
        round: async () => {
          await this.tick();
          return this.sleepMs();
        },
        onError: (error) => deps.logger.error('a scheduler tick failed', { error: error instanceof Error ? error.message : String(error) }),
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

  /** Schedules this process follows, active or not. */
  get size(): number {
    return this.followed.size;
  }

  /** Folds a batch of schedule events read from the log into what this process follows. */
  observe(batch: readonly RecordedEvent[]): void {
    const now = this.deps.clock.now().getTime();
    for (const recorded of batch) {
      if (!recorded.streamId.startsWith(SCHEDULE_STREAM_PREFIX)) continue;
      const event = parseScheduleEvent(recorded);
      let followed = this.followed.get(recorded.streamId);
      if (followed === undefined) {
        if (event.type !== 'ScheduleDefined') continue; // the stream's first event defines it
        followed = {
          workspaceId: event.data.workspaceId,
          name: event.data.name,
          state: scheduleDecider.initialState(),
          revision: -1,
          dueAt: null,
          verifyAt: null,
        };
        this.followed.set(recorded.streamId, followed);
      }
      // Already folded from a read of the stream.
      if (recorded.revision <= followed.revision) continue;
      followed.state = scheduleDecider.evolve(followed.state, event);
      followed.revision = recorded.revision;
      if (event.type === 'ScheduleFired' && !this.started.has(event.data.executionId)) followed.verifyAt = now + this.options.verifyAfterMs;
      followed.dueAt = dueAt(followed.state);
    }
    this.runner.wake();
  }

  /**
   * Decides every schedule due at the clock's now (and checks fires other processes appended);
   * what the loop runs, and what tests call with a clock of their own.
   */
  async tick(): Promise<void> {
    const now = this.deps.clock.now();
    for (const followed of this.followed.values()) {
      const { state } = followed;
      if (state.status !== 'active') continue;
      const due = followed.dueAt !== null && followed.dueAt <= now.getTime();
      const waiting = state.buffered !== null && !state.paused;
      const verify = followed.verifyAt !== null && followed.verifyAt <= now.getTime();
      if (!due && !waiting && !verify) continue;
      try {
        await this.settle(followed, now);
      } catch (error) {
        // Tried again at the next tick; a fire time is never lost by waiting.
        followed.verifyAt = now.getTime() + this.options.verifyAfterMs;
        this.deps.logger.warn('a schedule could not be settled; retrying', {
          workspaceId: followed.workspaceId,
          schedule: followed.name,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  /** When the loop should look next: the earliest due fire time or check, within `maxSleepMs`. */
  private sleepMs(): number {
    const now = this.deps.clock.now().getTime();
    let next = now + this.options.maxSleepMs;
    for (const { dueAt, verifyAt } of this.followed.values()) {
      if (dueAt !== null) next = Math.min(next, dueAt);
      if (verifyAt !== null) next = Math.min(next, verifyAt);
    }
    return Math.max(0, next - now);
  }

  private async settle(followed: Followed, now: Date): Promise<void> {
    const { workspaceId, name } = followed;
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await this.deps.schedules.read(workspaceId, name);
      this.adopt(followed, current.state, current.revision);
      const { state } = current;
      if (state.status !== 'active') return;
      // A scheduler may have stopped between appending a decision and starting its executions.
      for (const fire of state.owedStarts) await this.startFire(workspaceId, name, state, fire);
      const last = state.lastExecution;
      const previous = last === null ? null : { executionId: last.executionId, running: await this.runs(last.executionId) };
      let outcome;
      try {
        outcome = await this.deps.schedules.trigger(workspaceId, name, previous, now);
      } catch (error) {
        if (error instanceof WrongExpectedRevisionError) continue; // another scheduler decided first: look again
        throw error;
      }
      this.adopt(followed, outcome.state, outcome.revision);
      for (const event of outcome.events) {
        if (event.type === 'ScheduleFired') await this.startFire(workspaceId, name, outcome.state, event.data);
      }
      followed.verifyAt = null;
      return;
    }
  }

  private adopt(followed: Followed, state: ScheduleState, revision: number | null): void {
    if (revision === null || revision < followed.revision) return;
    followed.state = state;
    followed.revision = revision;
    followed.dueAt = dueAt(state);
  }

  /**
   * Whether the schedule's last execution still runs. `settle` starts every owed fire before it
   * asks, and the last execution is always one of them, so an execution that is not found was
   * started and then removed by retention, which removes only ended executions (or its start was
   * refused, which the schedule has recorded): it does not run.
   */
  private async runs(executionId: string): Promise<boolean> {
    try {
      return !isFinal((await this.deps.executions.load(executionId)).state);
    } catch (error) {
      if (error instanceof NotFoundError) return false;
      throw error;
    }
  }

  /** Starts a fired execution, or finds it started; a start the domain refuses is recorded as the fire's failure. */
  private async startFire(workspaceId: string, name: string, state: ScheduleState, fire: Pick<StartedFire, 'fireTime' | 'executionId'>) {
    if (this.started.has(fire.executionId) || state.definition === null) return;
    const principal: Principal = {
      subject: scheduleActor(name),
      workspaces: new Map([[workspaceId, 'operator']]),
      global: new Set(),
      tokenId: '',
    };
    const command = new StartExecutionCommand(
      principal,
      workspaceId,
      state.definition.workflow,
      undefined,
      { input: state.definition.input },
      {
        schedule: name,
        fireTime: fire.fireTime,
      },
    );
    try {
      const result = await this.deps.start(command);
      if (!result.replayed)
        this.deps.logger.debug('schedule fired', { workspaceId, schedule: name, fireTime: fire.fireTime, executionId: fire.executionId });
    } catch (error) {
      // Refusals that hold (a missing secret, a workflow gone) end the fire; anything else is tried again.
      if (!(error instanceof DomainError) || error.code === 'unavailable' || error.code === 'concurrency_conflict') throw error;
      await this.deps.schedules.failFire(workspaceId, name, fire, { code: error.code, message: error.message });
      this.deps.logger.warn('a scheduled start was refused', { workspaceId, schedule: name, fireTime: fire.fireTime, code: error.code });
    }
    this.started.add(fire.executionId);
  }
}

/** When a schedule's next fire time is due; null while it has none. */
function dueAt(state: ScheduleState): number | null {
  if (state.status !== 'active' || state.paused || state.definition === null) return null;
  const cursor = fireCursor(state);
  return cursor === null ? null : (nextFireTime(state.definition, new Date(cursor))?.getTime() ?? null);
}
