import type { Completion, PolledTask, TaskApi } from './task-api.js';
import type { TaskApiError } from './task-errors.js';

/** The most tasks one request takes, and the most completions one request carries (the API's bound). */
const MAX_PER_REQUEST = 100;
/** The most tasks a completion asks for beyond its own slot's next, for slots waiting now. */
const MAX_EXTRA_NEXT = 16;

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

/** A slot waiting for a task; `joined` when it took the place of a slot served while the poll was out (see `take`). */
interface SlotWaiter extends Waiter<PolledTask | null> {
  joined: boolean;
}

/** A poll out now: it asked for `max` tasks, for the slots of `waiters` that were not served otherwise since. */
interface OpenPoll {
  max: number;
  waiters: SlotWaiter[];
}

/** A task this worker holds with no slot to run it yet; `release` stops the heartbeats that keep its lease meanwhile. */
interface HeldTask {
  task: PolledTask;
  release: () => void;
}

/**
 * Polls on behalf of the slots waiting for a task: one poll asks for as many tasks as slots wait.
 * Tasks may also reach a slot without a poll (`offer`: taken with a completion); a slot so served
 * leaves a place in the poll it waited in, which the next slot to ask takes instead of opening a
 * poll of its own. A task that finds no slot free (a poll answering for a place nobody holds now)
 * is held, its lease heartbeated by `hold`, until a slot asks.
 */
export class TaskFetcher {
  private readonly waiting: SlotWaiter[] = [];
  private readonly open = new Set<OpenPoll>();
  private readonly held: HeldTask[] = [];
  /** Free slots promised to completions out now (`reserve`), for the extra tasks they may bring. */
  private promised = 0;
  private scheduled = false;

  constructor(
    private readonly api: TaskApi,
    private readonly workerId: string,
    private readonly waitMs: number,
    private readonly signal: AbortSignal,
    /** Keeps the lease of a task no slot can run yet; answers how to stop. */
    private readonly hold: (task: PolledTask) => () => void,
  ) {}

  /**
   * A task for one slot, or null when a poll came back with none (after its wait). A poll that
   * brought tasks, none for this slot, is followed by another at once: the slot keeps waiting.
   */
  take(): Promise<PolledTask | null> {
    const held = this.held.shift();
    if (held !== undefined) {
      held.release();
      return Promise.resolve(held.task);
    }
    return new Promise((resolve, reject) => {
      for (const poll of this.open) {
        if (poll.waiters.length < poll.max) {
          poll.waiters.push({ resolve, reject, joined: true });
          return;
        }
      }
      this.waiting.push({ resolve, reject, joined: false });
      this.schedule();
    });
  }

  /** Tasks held with no slot for them yet. */
  get holding(): number {
    return this.held.length;
  }

  /**
   * Promises up to `max` of the slots waiting now (not promised already) to a completion that asks
   * for tasks for them; `unreserve` the same number once its answer was handed out.
   */
  reserve(max: number): number {
    let free = this.waiting.length - this.held.length - this.promised;
    for (const poll of this.open) free += poll.waiters.length;
    const granted = Math.max(0, Math.min(max, free));
    this.promised += granted;
    return granted;
  }

  unreserve(count: number): void {
    this.promised -= count;
  }

  /**
   * A task claimed for this worker that no slot asked for (taken with a completion, or more than a
   * poll's waiting slots): a slot waiting to poll takes it, else one waiting in a poll, else it is held.
   */
  offer(task: PolledTask): void {
    const waiter = this.waiting.shift() ?? this.fromOpenPoll();
    if (waiter !== undefined) {
      waiter.resolve(task);
      return;
    }
    const entry: HeldTask = { task, release: () => undefined };
    this.held.push(entry);
    entry.release = this.hold(task);
  }

  /** Forgets a held task (its lease was lost, or its execution cancelled): no slot runs it. */
  discard(task: PolledTask): void {
    const index = this.held.findIndex((h) => h.task === task);
    if (index >= 0) this.held.splice(index, 1)[0].release();
  }

  /** Forgets every held task (the worker stopped); answers them. */
  discardAll(): PolledTask[] {
    const held = this.held.splice(0);
    for (const h of held) h.release();
    return held.map((h) => h.task);
  }

  private fromOpenPoll(): SlotWaiter | undefined {
    for (const poll of this.open) {
      const waiter = poll.waiters.shift();
      if (waiter !== undefined) return waiter;
    }
    return undefined;
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
    const waiters = this.waiting.splice(0, MAX_PER_REQUEST);
    if (waiters.length === 0) return;
    if (this.waiting.length > 0) this.schedule();
    const poll: OpenPoll = { max: waiters.length, waiters };
    this.open.add(poll);
    let tasks: PolledTask[];
    try {
      tasks = await this.api.pollMany(this.workerId, this.waitMs, poll.max, this.signal);
    } catch (error) {
      this.open.delete(poll);
      for (const waiter of poll.waiters) waiter.reject(error);
      return;
    }
    this.open.delete(poll);
    // The slots still waiting in this poll now: those served meanwhile left it, others joined.
    const unserved = poll.waiters;
    const served = unserved.splice(0, tasks.length);
    served.forEach((waiter, i) => waiter.resolve(tasks[i]));
    for (const task of tasks.slice(served.length)) this.offer(task);
    if (unserved.length === 0) return;
    if (this.signal.aborted) {
      for (const waiter of unserved) waiter.resolve(null);
      return;
    }
    // Nothing came: a slot that began this poll has waited its wait; one that joined it later asks again.
    const again = tasks.length === 0 ? unserved.filter((w) => w.joined) : unserved;
    if (tasks.length === 0) for (const waiter of unserved) if (!waiter.joined) waiter.resolve(null);
    if (again.length === 0) return;
    for (const waiter of again) waiter.joined = false;
    this.waiting.unshift(...again);
    this.schedule();
  }
}

export type CompletionBody = { workerId: string; fencingToken: number; next?: boolean } & Completion;

interface Pending extends Waiter<PolledTask | null> {
  taskId: string;
  body: CompletionBody;
}

/**
 * Sends the completions ready in the same turn together, and asks with them for a task for each
 * completion that wants one (`next`) and for each slot of the worker waiting for one now (up to
 * `MAX_EXTRA_NEXT`): a task that ends schedules its successors, and the completion's own append
 * claims them all (a diamond's two branches at once). One completion asking for one task goes as
 * it always did (the single route, `next: true`); otherwise one batch request. Each completion
 * gets its own answer: the task taken for it (or null), or the error it was refused with; the
 * tasks taken beyond those go to the waiting slots (`TaskFetcher.offer`).
 */
export class CompletionBatcher {
  private pending: Pending[] = [];

  constructor(
    private readonly api: TaskApi,
    private readonly fetcher: TaskFetcher,
  ) {}

  complete(taskId: string, body: CompletionBody): Promise<PolledTask | null> {
    return new Promise((resolve, reject) => {
      this.pending.push({ taskId, body, resolve, reject });
      if (this.pending.length === 1) later(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending.splice(0, MAX_PER_REQUEST);
    if (this.pending.length > 0) later(() => void this.flush());
    const wanted = batch.filter((p) => p.body.next === true).length;
    // Slots that will take a held task need none from this request.
    const extra = wanted === 0 ? 0 : this.fetcher.reserve(Math.min(MAX_EXTRA_NEXT, MAX_PER_REQUEST - wanted));
    const asked = Math.max(0, wanted - this.fetcher.holding) + extra;
    try {
      await this.send(batch, asked);
    } finally {
      this.fetcher.unreserve(extra);
    }
  }

  private async send(batch: Pending[], asked: number): Promise<void> {
    if (batch.length === 1 && asked <= 1) {
      const [only] = batch;
      const { next: _next, ...body } = only.body;
      await this.api.complete(only.taskId, asked === 1 ? { ...body, next: true } : body).then(only.resolve, only.reject);
      return;
    }
    let answer: { results: Array<TaskApiError | null>; next: PolledTask[] };
    try {
      answer = await this.api.completeMany(
        batch.map(({ taskId, body: { next: _next, ...rest } }) => ({ taskId, ...rest })),
        asked,
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
    // Taken for the waiting slots, or for a completion that was refused (its slot, free now, asks).
    for (const task of taken) this.fetcher.offer(task);
  }
}
