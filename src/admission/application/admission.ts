import { CatchUpRunner } from '../../core/catch-up-runner.js';
import type { Clock } from '../../core/clock.port.js';
import { NotFoundError } from '../../core/errors.js';
import type { EventStore, RecordedEvent } from '../../core/event-store.port.js';
import { uuidV5 } from '../../core/ids.js';
import type { Logger } from '../../core/logger.js';
import type { ExecutionStreams } from '../../executions/application/execution-streams.js';
import { awaitsSlot, holdsSlot } from '../../executions/domain/admit-execution.js';
import { executionStreamId, parseExecutionEvent } from '../../executions/domain/execution-event.parser.js';
import { initialState, type ExecutionState } from '../../executions/domain/execution.state.js';
import { type CheckpointStore, CheckpointThrottle } from '../../postgres/checkpoint-store.js';
import type { SqlClient } from '../../postgres/sql-client.port.js';
import { ADMISSION_ACTOR, type WorkspaceStreams } from '../../workspaces/application/workspace-streams.js';
import { freeSlots, holdsQuotaSlot, type QuotaState } from '../../workspaces/domain/quota.decider.js';
import { WORKSPACE_STREAM_PREFIX } from '../../workspaces/domain/workspace-identity.js';
import { parseWorkspaceEvent } from '../../workspaces/domain/workspace-settings.events.js';
import type { AdmissionQueue, QueuedRun, RunEnd, Wait } from '../infrastructure/admission-queue.js';

/** A slot as the hooks see it: the run it admits. */
export type Slot = Pick<QueuedRun, 'workspaceId' | 'executionId' | 'attemptId'>;

/**
 * Fault injection for tests: awaited at the step named, with the admission's stop signal. A hook
 * that waits for the signal and then throws stands for a process killed at that point: nothing
 * after it runs, and the next admission process must finish the work.
 */
export interface AdmissionHooks {
  /** A slot was granted; its attempt is not scheduled yet. */
  afterGrant?(slot: Slot, signal: AbortSignal): Promise<void> | void;
  /** The attempt was scheduled (or found scheduled); the queue does not know yet. */
  afterAdmit?(slot: Slot, signal: AbortSignal): Promise<void> | void;
  /** A slot was given back; the queue does not know yet. */
  afterRelease?(slot: Slot, signal: AbortSignal): Promise<void> | void;
}

export interface AdmissionDeps {
  store: EventStore;
  executions: Pick<ExecutionStreams, 'handle' | 'load'>;
  workspaces: Pick<WorkspaceStreams, 'settings' | 'quota' | 'grantSlots' | 'releaseSlots'>;
  /** The read-model Postgres: the queue and the checkpoint. */
  sql: SqlClient;
  checkpoints: CheckpointStore;
  queue: AdmissionQueue;
  clock: Clock;
  logger: Logger;
}

export interface AdmissionOptions {
  /** Checkpoint name; admissions with one name share their progress. */
  name?: string;
  batchSize?: number;
  /** How often the queue is looked through for work this process was not woken for (another process's, a failed pass). */
  sweepMs?: number;
  /** How long a released run is remembered (see AdmissionQueue.purgeReleased). */
  forgetReleasedAfterMs?: number;
  /** Waiting runs a pass reads from the head of a workspace's queue; a pass that grants them all is followed by another. */
  waitingPage?: number;
  hooks?: AdmissionHooks;
}

const EXECUTION_PREFIX = executionStreamId('');
/** What ends a run's hold on its slot: the execution's end, or the slot given back while it waits for its children. */
const ENDINGS = new Set(['ExecutionSucceeded', 'ExecutionFailed', 'ExecutionTimedOut', 'ExecutionCancelled', 'SlotYielded']);
const NEVER = new AbortController().signal;
/** Admissions a pass appends at once (each to its own execution stream). */
const ADMIT_CONCURRENCY = 32;

/**
 * Admits executions of workspaces with a concurrency bound (docs/architecture.md, "Workspace
 * quotas"), run by the dispatcher role. A checkpointed subscription of the log queues the runs
 * that wait for a slot (`ExecutionAwaitingSlot`) and marks those that ended; a pass per
 * workspace then, in order: gives back the slots of ended runs, settles slots a crashed pass
 * left, schedules runs granted but not yet scheduled, and grants slots to waiting runs in queue
 * order while the bound leaves room, scheduling each run's attempt after its grant.
 *
 * The quota promise (docs/architecture.md): a grant is appended to the workspace's quota stream
 * with its expected revision, decided on the stream as it stands, so any number of admission
 * processes never hold more slots than the bound; every step is idempotent, so a crash between
 * two appends is finished by the next pass, never done twice.
 */
export class Admission {
  private readonly options: Required<Omit<AdmissionOptions, 'hooks'>> & { hooks: AdmissionHooks };
  /** Keeps the queue from the log and runs the passes. */
  private readonly runner: CatchUpRunner;
  private readonly throttle = new CheckpointThrottle();
  /** Workspaces with something new to admit or give back. */
  private readonly dirty = new Set<string>();
  /**
   * Executions with a run in the queue that has not ended, as of what this subscription read:
   * loaded from the queue when it resumes from its checkpoint (every run that began waiting
   * before the checkpoint is in the queue by then), then kept up as it reads. Only their ends
   * are written to the queue, so executions of workspaces without a bound cost nothing.
   */
  private readonly open = new Set<string>();
  /** When the loop next looks through the whole queue, and purges released runs (performance.now()). */
  private nextSweep = 0;
  private nextPurge = 0;
  /** The workspace whose pass failed last, for the log. */
  private failedPass: string | undefined;

  constructor(
    private readonly deps: AdmissionDeps,
    options: AdmissionOptions = {},
  ) {
    this.options = {
      name: options.name ?? 'admission',
      batchSize: options.batchSize ?? 500,
      sweepMs: options.sweepMs ?? 1_000,
      forgetReleasedAfterMs: options.forgetReleasedAfterMs ?? 3_600_000,
      waitingPage: options.waitingPage ?? 500,
      hooks: options.hooks ?? {},
    };
    // The feed's name, batchSize, store and checkpoints: the options and deps of those names. A position
    // skipped by a batch that changed nothing is stored by the runner once its interval passed.
    this.runner = new CatchUpRunner({
      feed: {
        ...this.options,
        ...deps,
        streamPrefixes: [EXECUTION_PREFIX, WORKSPACE_STREAM_PREFIX],
        handle: (batch) => this.track(batch),
        onResume: () => this.resume(),
        throttle: this.throttle,
      },
      loop: {
        round: (signal) => this.round(signal),
        onError: (error, failures) =>
          deps.logger.warn('an admission pass failed; retrying', { err: error, workspaceId: this.failedPass, failures }),
      },
      logger: deps.logger,
    });
  }

  start(): void {
    if (this.runner.started) return;
    this.nextSweep = 0;
    this.nextPurge = performance.now() + Math.min(this.options.forgetReleasedAfterMs, 60_000);
    this.runner.start();
  }

  /** Stops reading the log and admitting; a pass in flight finishes first (a hook may end it early). */
  async stop(): Promise<void> {
    await this.runner.stop();
  }

  /** Before reading on from the checkpoint: which executions have runs in the queue. */
  async resume(): Promise<void> {
    const open = await this.deps.queue.openExecutions();
    this.open.clear();
    for (const executionId of open) this.open.add(executionId);
  }

  /** Applies one batch of the log to the queue, then wakes the passes of the workspaces it touched. */
  async track(batch: readonly RecordedEvent[]): Promise<void> {
    const waits: Wait[] = [];
    const ends: RunEnd[] = [];
    const touched = new Set<string>();
    for (const recorded of batch) {
      if (recorded.streamId.startsWith(WORKSPACE_STREAM_PREFIX)) {
        // A new bound may admit waiting runs at once (raised, or removed).
        const event = parseWorkspaceEvent(recorded);
        if (event.type === 'WorkspaceSettingsChanged') touched.add(event.data.workspaceId);
        continue;
      }
      const executionId = recorded.streamId.slice(EXECUTION_PREFIX.length);
      if (recorded.type === 'ExecutionAwaitingSlot') {
        const event = parseExecutionEvent(recorded);
        if (event.type !== 'ExecutionAwaitingSlot') continue;
        waits.push({ attemptId: event.data.attemptId, executionId, workspaceId: workspaceOf(recorded), position: recorded.position });
        this.open.add(executionId);
      } else if (ENDINGS.has(recorded.type) && this.open.delete(executionId)) {
        ends.push({ executionId, position: recorded.position });
      }
    }
    const last = batch[batch.length - 1];
    if (last === undefined) return;
    if (waits.length + ends.length > 0) {
      // Queue changes and checkpoint commit together. What they record is derived from the log:
      // a crash may lose both, and the batch is read again (every change is idempotent).
      const ended = await this.deps.sql.transaction(
        async (tx) => {
          const added = this.deps.queue.addWaits(waits, tx);
          const marked = this.deps.queue.markEnded(ends, tx);
          const saved = this.deps.checkpoints.save(this.options.name, last.position, tx);
          const [, workspaces] = await Promise.all([added, marked, saved]);
          return workspaces;
        },
        { asynchronousCommit: true },
      );
      this.throttle.shouldSave(true, last.position);
      for (const wait of waits) touched.add(wait.workspaceId);
      for (const workspaceId of ended) touched.add(workspaceId);
    } else if (this.throttle.shouldSave(false, last.position)) {
      await this.deps.checkpoints.save(this.options.name, last.position);
    }
    if (touched.size === 0) return;
    for (const workspaceId of touched) this.dirty.add(workspaceId);
    this.runner.wake();
  }

  /** One pass over every workspace with work (the queue's view): for tests and operations. */
  async passAll(): Promise<void> {
    for (const workspaceId of await this.deps.queue.workspacesWithWork()) await this.pass(workspaceId);
  }

  /**
   * Settles one workspace's queue against its quota stream: slots of ended runs back, slots a
   * crashed pass left settled, granted runs scheduled, then grants in queue order while the bound
   * leaves room. Safe to run in any number of processes at once: every write is decided on the
   * stream it goes to and appended with that stream's expected revision.
   */
  async pass(workspaceId: string, signal: AbortSignal = NEVER): Promise<void> {
    // The quota first, the queue second: a run granted before the quota was read is in the queue as read.
    let quota = (await this.deps.workspaces.quota(workspaceId)).state;
    const runs = await this.deps.queue.open(workspaceId, this.options.waitingPage);

    quota = await this.release(
      workspaceId,
      runs.filter((run) => run.status === 'ended'),
      quota,
      signal,
    );

    // Slots of runs not read above: waiting further down the queue (granted out of order by a
    // replay), or no longer open at all.
    const read = new Set(runs.map((run) => run.attemptId));
    const unread = [...quota.holders.keys()].filter((attemptId) => !read.has(attemptId));
    const found = new Map((await this.deps.queue.ofAttempts(unread)).map((run) => [run.attemptId, run]));
    for (const attemptId of unread) {
      const run = found.get(attemptId);
      if (run?.status === 'admitted') continue;
      if (run?.status === 'waiting') quota = await this.admit(workspaceId, [run], quota, signal);
      else quota = await this.settleUnqueued({ workspaceId, executionId: quota.holders.get(attemptId)!, attemptId }, quota, signal);
    }

    // Granted by a pass that stopped before scheduling their attempts (a crash, another process mid-way).
    const waiting = runs.filter((run) => run.status === 'waiting');
    quota = await this.admit(
      workspaceId,
      waiting.filter((run) => holdsQuotaSlot(quota, run.attemptId)),
      quota,
      signal,
    );

    const { state: workspace } = await this.deps.workspaces.settings(workspaceId);
    const bound = workspace.settings.maxConcurrentExecutions;
    // First in, first out: as many runs from the head of the queue as there are free slots.
    const candidates = waiting.filter((run) => !holdsQuotaSlot(quota, run.attemptId)).slice(0, freeSlots(quota, bound));
    if (candidates.length === 0) return;
    const granted = await this.deps.workspaces.grantSlots(workspaceId, candidates, bound);
    quota = granted.state;
    // Fewer than asked when another process took slots between our read and our append.
    const admitted = candidates.filter((run) => holdsQuotaSlot(quota, run.attemptId));
    if (granted.appended)
      this.deps.logger.debug('slots granted', { workspaceId, granted: granted.events.length, held: quota.holders.size, bound });
    for (const run of admitted) await this.options.hooks.afterGrant?.(run, signal);
    quota = await this.admit(workspaceId, admitted, quota, signal);
    // Every waiting run read was admitted and there may be more behind them: read on.
    if (admitted.length === candidates.length && waiting.length === this.options.waitingPage) this.dirty.add(workspaceId);
  }

  /**
   * Schedules the attempts of runs that hold a slot, each with its own append (the store groups
   * concurrent ones); a run that waits no more gives its slot back.
   */
  private async admit(workspaceId: string, runs: readonly Slot[], quota: QuotaState, signal: AbortSignal): Promise<QuotaState> {
    const admitted: Slot[] = [];
    const over: Slot[] = [];
    for (let i = 0; i < runs.length; i += ADMIT_CONCURRENCY) {
      const chunk = runs.slice(i, i + ADMIT_CONCURRENCY);
      const outcomes = await Promise.all(
        chunk.map((run) =>
          this.deps.executions.handle(
            run.executionId,
            {
              type: 'AdmitExecution',
              data: { attemptId: run.attemptId },
              metadata: { now: this.deps.clock.now(), actor: ADMISSION_ACTOR },
            },
            // One AttemptScheduled per admission, however often it is retried.
            { eventIds: (index) => uuidV5(`${run.executionId}:admit:${run.attemptId}:${index}`) },
          ),
        ),
      );
      chunk.forEach((run, index) => (holdsSlot(outcomes[index].state, run.attemptId) ? admitted : over).push(run));
    }
    for (const run of runs) await this.options.hooks.afterAdmit?.(run, signal);
    await this.deps.queue.setStatus(
      admitted.map((run) => run.attemptId),
      'admitted',
    );
    // Cancelled or timed out while they waited (or while their slot was granted): their slots are free again.
    return this.release(workspaceId, over, quota, signal);
  }

  /** Gives back the slots of runs that are over (nothing for those that hold none) and forgets the runs. */
  private async release(workspaceId: string, runs: readonly Slot[], quota: QuotaState, signal: AbortSignal): Promise<QuotaState> {
    if (runs.length === 0) return quota;
    const released = await this.deps.workspaces.releaseSlots(workspaceId, runs);
    if (released.appended) this.deps.logger.debug('slots released', { workspaceId, released: released.events.length });
    for (const run of runs) await this.options.hooks.afterRelease?.(run, signal);
    await this.deps.queue.setStatus(
      runs.map((run) => run.attemptId),
      'released',
    );
    return released.state;
  }

  /**
   * A slot held by a run the queue does not list as open (a pass granted a run another process
   * had just let go, and stopped before giving it back): its execution decides. A run that waits
   * or holds is queued again (that is not expected) and admitted; any other gives the slot back.
   */
  private async settleUnqueued(slot: Slot, quota: QuotaState, signal: AbortSignal): Promise<QuotaState> {
    let state: ExecutionState = initialState();
    let history: RecordedEvent[] = [];
    try {
      ({ state, history } = await this.deps.executions.load(slot.executionId));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
    if (!awaitsSlot(state, slot.attemptId) && !holdsSlot(state, slot.attemptId))
      return this.release(slot.workspaceId, [slot], quota, signal);
    const waited = history.find(
      (e) => e.type === 'ExecutionAwaitingSlot' && (e.data as { attemptId?: unknown }).attemptId === slot.attemptId,
    );
    if (waited === undefined) throw new Error(`execution ${slot.executionId} holds a slot for ${slot.attemptId} but never waited for it`);
    // Not expected: a run is queued before it can be granted, and leaves the queue only once over.
    this.deps.logger.warn('a slot was held by a run missing from the admission queue; queued again', { ...slot });
    await this.deps.queue.addWaits([{ ...slot, position: waited.position }]);
    this.open.add(slot.executionId);
    return this.admit(slot.workspaceId, [slot], quota, signal);
  }

  /**
   * One turn of the loop: a sweep of the whole queue when due, the purge of released runs when
   * due, then a pass per workspace with work; resolves to how long to sleep (none while work is
   * left, else until the next sweep, woken when the subscription marks a workspace dirty).
   */
  private async round(signal: AbortSignal): Promise<number> {
    const { sweepMs, forgetReleasedAfterMs } = this.options;
    const workspaces: string[] = [];
    try {
      if (performance.now() >= this.nextSweep) {
        for (const workspaceId of await this.deps.queue.workspacesWithWork()) this.dirty.add(workspaceId);
        this.nextSweep = performance.now() + sweepMs;
      }
      if (performance.now() >= this.nextPurge) {
        await this.deps.queue.purgeReleased(forgetReleasedAfterMs);
        this.nextPurge = performance.now() + Math.min(forgetReleasedAfterMs, 60_000);
      }
      workspaces.push(...this.dirty);
      this.dirty.clear();
      while (workspaces.length > 0 && !signal.aborted) {
        await this.pass(workspaces[0], signal);
        workspaces.shift();
      }
    } catch (error) {
      // The workspace that failed and those after it are tried again after a backoff.
      for (const workspaceId of workspaces) this.dirty.add(workspaceId);
      this.failedPass = workspaces[0];
      throw error;
    }
    return this.dirty.size === 0 ? Math.max(0, this.nextSweep - performance.now()) : 0;
  }
}

/** Every execution event written since workspaces bounded executions carries its workspace. */
function workspaceOf(recorded: RecordedEvent): string {
  const workspaceId = recorded.metadata['workspaceId'];
  if (typeof workspaceId !== 'string') throw new Error(`event ${recorded.id} at ${recorded.streamId} carries no workspaceId`);
  return workspaceId;
}
