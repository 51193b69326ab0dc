import type { Completion, PolledTask, TaskApi } from './task-api.js';
import type { TaskApiError } from './task-errors.js';

/**
 * How a worker's slots share requests: the slots that want a task in the same turn ask in one
 * poll (`TaskFetcher`), and the completions ready in the same turn go in one request
 * (`CompletionBatcher`), so that a busy worker sends a request per batch rather than per task.
 * Each slot still sees exactly what it saw alone: a task or nothing, an answer or an error.
 */

interface Waiter<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** Runs `flush` once, after everything else this turn (timers and I/O of this turn included). */
function later(flush: () => void): void {
  setImmediate(flush);
}

/** Polls on behalf of the slots waiting for a task: one poll asks for as many tasks as slots wait. */
export class TaskFetcher {
  private readonly waiting: Waiter<PolledTask | null>[] = [];
  /** Tasks this worker holds already, for the next slot that asks (see `offer`). */
  private readonly spare: PolledTask[] = [];
  private scheduled = false;

  constructor(
    private readonly api: TaskApi,
    private readonly workerId: string,
    private readonly waitMs: number,
    private readonly signal: AbortSignal,
  ) {}

  /**
   * A task for one slot, or null when a poll came back with none (after its wait). A poll that
   * brought tasks, none for this slot, is followed by another at once: the slot keeps waiting.
   */
  take(): Promise<PolledTask | null> {
    const held = this.spare.shift();
    if (held !== undefined) return Promise.resolve(held);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.schedule();
    });
  }

  /** A task claimed for this worker that no slot asked for (see CompletionBatcher): the next slot to ask runs it. */
  offer(task: PolledTask): void {
    const waiter = this.waiting.shift();
    if (waiter !== undefined) waiter.resolve(task);
    else this.spare.push(task);
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    later(() => {
      this.scheduled = false;
      void this.poll();
    });
  }

  private async poll(): Promise<void> {
    const waiters = this.waiting.splice(0, 100);
    if (waiters.length === 0) return;
    if (this.waiting.length > 0) this.schedule();
    let tasks: PolledTask[];
    try {
      tasks = await this.api.pollMany(this.workerId, this.waitMs, waiters.length, this.signal);
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
      return;
    }
    if (tasks.length === 0) {
      for (const waiter of waiters) waiter.resolve(null);
      return;
    }
    waiters.forEach((waiter, i) => (i < tasks.length ? waiter.resolve(tasks[i]) : undefined));
    const unserved = waiters.slice(tasks.length);
    if (unserved.length === 0) return;
    if (this.signal.aborted) {
      for (const waiter of unserved) waiter.resolve(null);
      return;
    }
    this.waiting.unshift(...unserved);
    this.schedule();
  }
}

export type CompletionBody = { workerId: string; fencingToken: number; next?: boolean } & Completion;

interface Pending extends Waiter<PolledTask | null> {
  taskId: string;
  body: CompletionBody;
}

/**
 * Sends the completions ready in the same turn together. One alone goes as it always did (the
 * single route, `next: true` when asked); several go in one batch request whose `next` asks for
 * a task for each completion that wanted one. Each completion gets its own answer: the task taken
 * for it (or null), or the error it was refused with.
 */
export class CompletionBatcher {
  private pending: Pending[] = [];

  constructor(
    private readonly api: TaskApi,
    /** Takes a task claimed for a completion that was then refused: its slot runs it. */
    private readonly spare: (task: PolledTask) => void,
  ) {}

  complete(taskId: string, body: CompletionBody): Promise<PolledTask | null> {
    return new Promise((resolve, reject) => {
      this.pending.push({ taskId, body, resolve, reject });
      if (this.pending.length === 1) later(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending.splice(0, 100);
    if (this.pending.length > 0) later(() => void this.flush());
    if (batch.length === 1) {
      const [only] = batch;
      await this.api.complete(only.taskId, only.body).then(only.resolve, only.reject);
      return;
    }
    const wanted = batch.filter((p) => p.body.next === true).length;
    let answer: { results: Array<TaskApiError | null>; next: PolledTask[] };
    try {
      answer = await this.api.completeMany(
        batch.map(({ taskId, body: { next: _next, ...rest } }) => ({ taskId, ...rest })),
        wanted,
      );
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    const taken = [...answer.next];
    batch.forEach((p, i) => {
      const refused = answer.results[i];
      if (refused !== null) p.reject(refused);
      else p.resolve(p.body.next === true ? (taken.shift() ?? null) : null);
    });
    // Taken for a completion that was refused: the refused one's slot, free now, runs it.
    for (const task of taken) this.spare(task);
  }
}
