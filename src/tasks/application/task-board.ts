import { Inject, Injectable, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import { ExecutionsReadModel } from '../../../projections/executions.read-model.js';
import { CLOCK, type Clock } from '../../core/clock.port.js';
import { EVENT_STORE, type EventStore, type Position, type RecordedEvent } from '../../core/event-store.port.js';
import { LOGGER, type Logger } from '../../core/logger.js';
import { ExecutionStreams } from '../../executions/application/execution-streams.js';
import type { ExecutionEvent } from '../../executions/domain/execution.events.js';
import type { ExecutionState } from '../../executions/domain/execution.state.js';
import { parseExecutionEvent } from '../../executions/domain/execution-event.parser.js';

/** A task a poller of its queue may be handed: scheduled, not claimed, not ended (as far as this process knows). */
export interface BoardTask {
  readonly taskId: string;
  readonly executionId: string;
  readonly workspaceId: string;
  readonly queue: string;
  readonly notBeforeMs: number;
}

/** What a claim attempt made of a task: it was ours, it is gone (claimed elsewhere, ended), or not due yet. */
export type ClaimVerdict<T> = { claimed: T } | { gone: true } | { notDue: true };

interface Entry {
  readonly task: BoardTask;
  /** A poller of this process is claiming it: the others skip it meanwhile. */
  reserved: boolean;
}

interface Waiter {
  wake(): void;
}

/** The tasks of one (workspace, queue) in the order they were scheduled, and the pollers waiting for one. */
class QueueBoard {
  readonly entries = new Map<string, Entry>();
  readonly waiters = new Set<Waiter>();
  timer: NodeJS.Timeout | null = null;
  timerAtMs = Infinity;

  firstDue(nowMs: number): Entry | undefined {
    for (const entry of this.entries.values()) if (!entry.reserved && entry.task.notBeforeMs <= nowMs) return entry;
    return undefined;
  }

  dueCount(nowMs: number): number {
    let count = 0;
    for (const entry of this.entries.values()) if (!entry.reserved && entry.task.notBeforeMs <= nowMs) count++;
    return count;
  }

  earliestNotDue(nowMs: number): number {
    let earliest = Infinity;
    for (const entry of this.entries.values()) if (entry.task.notBeforeMs > nowMs) earliest = Math.min(earliest, entry.task.notBeforeMs);
    return earliest;
  }
}

const TASK_ENDS = new Set(['TaskClaimed', 'TaskSucceeded', 'TaskFailed', 'TaskTimedOut', 'TaskCancelled']);

/**
 * This process's board of tasks to hand out, per (workspace, queue), in the order they were
 * scheduled (docs/architecture.md, "Waiting steps"). It costs no database work per poller: a
 * poller with nothing to take waits in memory, and is woken when the log this process follows
 * shows a task scheduled on its queue (or a retried task becoming due). The board starts with
 * the first poll: the open tasks of the `executions` read model and the checkpoint they reflect,
 * then every execution event after that checkpoint, so no task is missed across a restart.
 *
 * The board only proposes: a claim is a command on the task's execution stream, decided with the
 * expected revision, so two pollers (of this process or another) never both win a task. A task
 * claimed elsewhere leaves the board when the log says so, or when a claim here is refused.
 */
@Injectable()
export class TaskBoard implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly queues = new Map<string, QueueBoard>();
  private readonly queueOfTask = new Map<string, string>();
  /** Tasks offered by the append that scheduled them before the log showed them here: the log adds them no second time. */
  private readonly aheadOfLog = new Set<string>();
  private started: Promise<void> | null = null;
  private readonly stop = new AbortController();
  private readonly log: Logger;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(ExecutionsReadModel) private readonly executions: ExecutionsReadModel,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) logger: Logger,
    @Inject(ExecutionStreams) streams: ExecutionStreams,
  ) {
    this.log = logger.child({ component: 'task-board' });
    streams.onAppend((executionId, events, state) => this.appended(executionId, events, state));
  }

  /** Whether the process is shutting down: polls answer at once, and their connections close. */
  get stopping(): boolean {
    return this.stop.signal.aborted;
  }

  /**
   * Before the HTTP server closes: waiting pollers are answered (204) at once, and new polls too,
   * so that pollers on kept-alive connections cannot hold the server open.
   */
  beforeApplicationShutdown(): void {
    this.onApplicationShutdown();
  }

  onApplicationShutdown(): void {
    this.stop.abort();
    for (const queue of this.queues.values()) {
      if (queue.timer) clearTimeout(queue.timer);
      for (const waiter of queue.waiters) waiter.wake();
    }
  }

  /**
   * Hands the oldest due task of the queue to `claim`, waiting up to `waitMs` for one; null when
   * none could be had in time, or when `signal` aborted (the poller went away: nothing is claimed
   * for it after that). `claim` runs the claim command; what it answers decides what follows.
   */
  async poll<T>(
    workspaceId: string,
    queue: string,
    options: { waitMs: number; signal: AbortSignal },
    claim: (task: BoardTask) => Promise<ClaimVerdict<T>>,
  ): Promise<T | null> {
    await this.ensureStarted();
    const key = queueKey(workspaceId, queue);
    const deadline = this.clock.now().getTime() + options.waitMs;
    for (;;) {
      if (options.signal.aborted || this.stop.signal.aborted) return null;
      const board = this.board(key);
      const now = this.clock.now().getTime();
      const entry = board.firstDue(now);
      if (entry !== undefined) {
        entry.reserved = true;
        let verdict: ClaimVerdict<T>;
        try {
          verdict = await claim(entry.task);
        } catch (error) {
          entry.reserved = false;
          this.kick(key);
          throw error;
        }
        if ('claimed' in verdict || 'gone' in verdict) this.remove(entry.task.taskId);
        else entry.reserved = false;
        if ('claimed' in verdict) return verdict.claimed;
        // Not due by the decider's clock after all: look again shortly rather than at once.
        if ('notDue' in verdict) await this.waitForTask(key, Math.max(1, Math.min(100, deadline - now)), options.signal);
        continue;
      }
      const remaining = deadline - now;
      if (remaining <= 0) return null;
      await this.waitForTask(key, remaining, options.signal);
    }
  }

  /** Parks the poller until a task may be there for it, the time is up, or it went away. */
  private waitForTask(key: string, ms: number, signal: AbortSignal): Promise<void> {
    const board = this.board(key);
    this.armTimer(key, board);
    return new Promise((resolve) => {
      let done = false;
      const finish = (woken: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        board.waiters.delete(waiter);
        // A wake-up meant for a poller that left goes to the next one.
        if (!woken) this.kick(key);
        resolve();
      };
      const waiter: Waiter = { wake: () => finish(true) };
      const onAbort = () => finish(false);
      const timer = setTimeout(() => finish(false), ms);
      signal.addEventListener('abort', onAbort, { once: true });
      board.waiters.add(waiter);
    });
  }

  /** Wakes as many waiting pollers as there are due tasks nobody is claiming. */
  private kick(key: string): void {
    const board = this.queues.get(key);
    if (board === undefined || board.waiters.size === 0) return;
    const now = this.clock.now().getTime();
    let due = board.dueCount(now);
    for (const waiter of [...board.waiters]) {
      if (due-- <= 0) break;
      waiter.wake();
    }
    this.armTimer(key, board);
  }

  /** One timer per queue, for the earliest task not due yet (a retry's backoff), while pollers wait. */
  private armTimer(key: string, board: QueueBoard): void {
    const now = this.clock.now().getTime();
    const at = board.waiters.size > 0 ? board.earliestNotDue(now) : Infinity;
    if (at === board.timerAtMs) return;
    if (board.timer) clearTimeout(board.timer);
    board.timer = null;
    board.timerAtMs = at;
    if (at === Infinity) return;
    board.timer = setTimeout(
      () => {
        board.timer = null;
        board.timerAtMs = Infinity;
        this.kick(key);
      },
      Math.max(0, at - now),
    );
  }

  private board(key: string): QueueBoard {
    let board = this.queues.get(key);
    if (board === undefined) this.queues.set(key, (board = new QueueBoard()));
    return board;
  }

  private add(task: BoardTask): void {
    if (this.queueOfTask.has(task.taskId)) return;
    const key = queueKey(task.workspaceId, task.queue);
    this.queueOfTask.set(task.taskId, key);
    this.board(key).entries.set(task.taskId, { task, reserved: false });
    this.kick(key);
  }

  private remove(taskId: string): void {
    const key = this.queueOfTask.get(taskId);
    if (key === undefined) return;
    this.queueOfTask.delete(taskId);
    const board = this.queues.get(key);
    if (board === undefined) return;
    board.entries.delete(taskId);
    if (board.entries.size === 0 && board.waiters.size === 0) {
      if (board.timer) clearTimeout(board.timer);
      this.queues.delete(key);
    }
  }

  private ensureStarted(): Promise<void> {
    return (this.started ??= this.start().catch((error: unknown) => {
      this.started = null; // the next poll tries again
      throw error;
    }));
  }

  /** Loads the open tasks and starts following the log after the checkpoint they reflect. */
  private async start(): Promise<void> {
    let checkpoint: Position | null = null;
    try {
      const open = await this.executions.openTasks();
      checkpoint = open.checkpoint;
      const scheduled = open.tasks
        .filter((t) => t.status === 'scheduled')
        .sort((a, b) => a.scheduledAt.localeCompare(b.scheduledAt) || a.taskId.localeCompare(b.taskId));
      for (const t of scheduled) {
        this.add({
          taskId: t.taskId,
          executionId: t.executionId,
          workspaceId: t.workspaceId,
          queue: t.queue,
          notBeforeMs: Date.parse(t.notBefore),
        });
      }
    } catch (error) {
      // A read model of an older shape (its rebuild not switched in yet): the log from its start holds every task.
      this.log.warn('open tasks could not be read from the executions read model; following the log from its start', { err: error });
      this.queues.clear();
      this.queueOfTask.clear();
      checkpoint = null;
    }
    void this.follow(checkpoint);
  }

  private async follow(after: Position | null): Promise<void> {
    let position = after;
    while (!this.stop.signal.aborted) {
      try {
        for await (const batch of this.store.subscribeToAll({
          after: position,
          streamPrefixes: ['execution-'],
          signal: this.stop.signal,
        })) {
          for (const recorded of batch) this.apply(recorded);
          position = batch[batch.length - 1]?.position ?? position;
        }
      } catch (error) {
        if (this.stop.signal.aborted) return;
        this.log.warn('following the log for tasks failed; resuming', { err: error });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  private apply(recorded: RecordedEvent): void {
    if (recorded.type !== 'TaskScheduled' && !TASK_ENDS.has(recorded.type)) return;
    const event = parseExecutionEvent(recorded);
    if (event.type === 'TaskScheduled') {
      if (this.aheadOfLog.delete(event.data.taskId)) return;
      const workspaceId = recorded.metadata['workspaceId'];
      if (typeof workspaceId !== 'string') return;
      const d = event.data;
      this.add({
        taskId: d.taskId,
        executionId: recorded.streamId.slice('execution-'.length),
        workspaceId,
        queue: d.queue,
        notBeforeMs: Date.parse(d.notBefore),
      });
    } else if ('taskId' in event.data) {
      this.remove(event.data.taskId);
    }
  }

  /**
   * An append of this process to an execution stream (ExecutionStreams.onAppend): the tasks it
   * scheduled (with a start, a completion, a worker's result, a retry) go on the board at once
   * rather than when the log this process follows shows them, and the tasks it claimed or ended
   * leave it, so a poller of this process is neither kept waiting for the log nor offered a task
   * that is gone. Safe because the board only proposes (a claim is decided on the stream); the
   * log's copy of a task put here first is skipped, so a task claimed meanwhile is not proposed
   * again.
   */
  private appended(executionId: string, events: readonly ExecutionEvent[], state: ExecutionState): void {
    if (this.started === null || this.stop.signal.aborted || state.status === 'not_started') return;
    const scheduled = new Map<string, BoardTask>();
    for (const event of events) {
      if (event.type === 'TaskScheduled') {
        const d = event.data;
        if (this.queueOfTask.has(d.taskId)) continue;
        this.aheadOfLog.add(d.taskId);
        const task = {
          taskId: d.taskId,
          executionId,
          workspaceId: state.workspaceId,
          queue: d.queue,
          notBeforeMs: Date.parse(d.notBefore),
        };
        scheduled.set(d.taskId, task);
      } else if (TASK_ENDS.has(event.type) && 'taskId' in event.data) {
        // Claimed or ended in the same append that scheduled it: it never goes on the board.
        if (!scheduled.delete(event.data.taskId)) this.remove(event.data.taskId);
      }
    }
    for (const task of scheduled.values()) this.add(task);
  }

  /**
   * Whether the task a poll of this queue would be handed now (the oldest due task nobody is
   * claiming) belongs to `executionId`, or there is none: then a completion on that execution may
   * claim its own next task in its append without passing anyone in the queue's order.
   */
  nextDueIsOf(workspaceId: string, queue: string, executionId: string): boolean {
    const first = this.queues.get(queueKey(workspaceId, queue))?.firstDue(this.clock.now().getTime());
    return first === undefined || first.task.executionId === executionId;
  }

  /** Pollers waiting now, over every queue (operations and tests). */
  waitingPollers(): number {
    let count = 0;
    for (const board of this.queues.values()) count += board.waiters.size;
    return count;
  }
}

function queueKey(workspaceId: string, queue: string): string {
  return `${workspaceId}\u0000${queue}`;
}
