import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { backoffDelay, pause, type BackoffPolicy } from './backoff.js';
import { TaskApi, type Completion, type HeartbeatAnswer, type PolledTask } from './task-api.js';
import { CompletionBatcher, TaskFetcher } from './task-batching.js';
import { LeaseLostError, TaskApiError, TaskCancelledError, WorkerShutdownError, toTaskFailure } from './task-errors.js';

/** What a handler knows of the task it runs, and how it talks back while it runs. */
export interface TaskContext {
  readonly taskId: string;
  readonly executionId: string;
  readonly nodeId: string;
  /** 1 for the first try of the task, more for its retries. */
  readonly attempt: number;
  readonly workerId: string;
  /**
   * Fires when the handler should stop: the execution was cancelled (`TaskCancelledError`), this
   * worker lost the task's lease (`LeaseLostError`), or the worker is shutting down and the
   * handler outlived the stop's bound (`WorkerShutdownError`). `signal.reason` says which.
   */
  readonly signal: AbortSignal;
  /**
   * Sends a heartbeat now, with `progress` (any JSON) if given; the automatic ones go on. Rejects
   * with `LeaseLostError` when the task is no longer this worker's, or with the `TaskApiError` of a
   * failed call (the automatic heartbeats retry on their own).
   */
  heartbeat(progress?: unknown): Promise<HeartbeatAnswer>;
}

/** Runs one task: returns its output (any JSON, or undefined for none) or throws its failure. */
export type TaskHandler<Input = unknown, Output = unknown> = (input: Input, ctx: TaskContext) => Output | Promise<Output>;

/** `console` fits; so does any logger whose methods take a message and an object of fields. */
export interface TaskWorkerLogger {
  debug?(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface TaskWorkerOptions<Input = unknown, Output = unknown> {
  /** Flostra's API, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** A bearer token with the `task-worker` role in `workspace`. */
  token: string;
  workspace: string;
  queue: string;
  handler: TaskHandler<Input, Output>;
  /** Tasks run at once (1–1000); a slot polls only while it is free. Default 1. */
  concurrency?: number;
  /** Default `<hostname>-<pid>-<random>`; 1–200 characters. */
  workerId?: string;
  /** How long one poll waits for a task (0–30000 ms). Default 20000. */
  pollWaitMs?: number;
  /** Default: JSON lines on stderr, warnings and errors only. `null` logs nothing. */
  logger?: TaskWorkerLogger | null;
  /** Aborting it stops the worker as `stop({ timeoutMs: shutdownTimeoutMs })` does. */
  signal?: AbortSignal;
  /** Stop gracefully on SIGTERM and SIGINT (a second one gives the running tasks back at once). Default true. */
  handleSignals?: boolean;
  /** Bound of a stop caused by a signal or by `signal`. Default 30000 ms. */
  shutdownTimeoutMs?: number;
  /** Bound of one heartbeat or completion call, and of a poll beyond its wait. Default 10000 ms. */
  requestTimeoutMs?: number;
  /** Pauses after failed calls. Default `{ initialMs: 250, maxMs: 15000 }`. */
  backoff?: Partial<BackoffPolicy>;
}

export interface TaskWorker {
  readonly workerId: string;
  /** Tasks running now. */
  readonly activeTasks: number;
  /** Begins polling; returns the worker. Starting a started or stopped worker does nothing. */
  start(): TaskWorker;
  /**
   * Stops polling, lets running handlers finish for up to `timeoutMs` (default 30000), then
   * aborts the rest (`WorkerShutdownError`) and gives their tasks back: each is completed as
   * failed, retryable, code `worker_shutdown`. Resolves when the worker has stopped (as `done`).
   */
  stop(options?: { timeoutMs?: number }): Promise<void>;
  /** Resolves once the worker has stopped; never rejects. */
  readonly done: Promise<void>;
}

/** How long completions of tasks given back at a forced stop may keep retrying. */
const GIVE_BACK_GRACE_MS = 5_000;
/** An empty poll answered sooner than this is followed by a pause, so that a short wait cannot spin. */
const EMPTY_POLL_FLOOR_MS = 100;
const EMPTY_POLL_PAUSE_MS = 500;

interface RunningTask {
  readonly task: PolledTask;
  readonly controller: AbortController;
  cancelled: boolean;
  leaseLost: boolean;
  finished: boolean;
  heartbeatFailures: number;
  timer: NodeJS.Timeout | null;
  /** Settles the race with the handler when the worker gives the task back. */
  giveBack: (completion: Completion) => void;
}

/** A worker that polls one queue of a workspace and runs each task with `handler`. */
export function createTaskWorker<Input = unknown, Output = unknown>(options: TaskWorkerOptions<Input, Output>): TaskWorker {
  return new QueueWorker(options as unknown as TaskWorkerOptions);
}

class QueueWorker implements TaskWorker {
  readonly workerId: string;
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  private readonly api: TaskApi;
  private readonly fetcher: TaskFetcher;
  private readonly completions: CompletionBatcher;
  private readonly log: Required<TaskWorkerLogger>;
  private readonly concurrency: number;
  private readonly pollWaitMs: number;
  private readonly shutdownTimeoutMs: number;
  private readonly backoff: BackoffPolicy;
  private readonly polling = new AbortController();
  private readonly running = new Set<RunningTask>();
  private forcedAt: number | null = null;
  private readonly forceTimers: NodeJS.Timeout[] = [];
  private readonly signalListener = () => this.onSignal();
  private signalsSeen = 0;

  constructor(private readonly options: TaskWorkerOptions) {
    this.concurrency = integerOption('concurrency', options.concurrency ?? 1, 1, 1000);
    this.pollWaitMs = integerOption('pollWaitMs', options.pollWaitMs ?? 20_000, 0, 30_000);
    this.shutdownTimeoutMs = integerOption('shutdownTimeoutMs', options.shutdownTimeoutMs ?? 30_000, 0, 86_400_000);
    const requestTimeoutMs = integerOption('requestTimeoutMs', options.requestTimeoutMs ?? 10_000, 1, 600_000);
    this.backoff = { initialMs: options.backoff?.initialMs ?? 250, maxMs: options.backoff?.maxMs ?? 15_000 };
    for (const name of ['url', 'token', 'workspace', 'queue'] as const) {
      if (typeof options[name] !== 'string' || options[name] === '') throw new TypeError(`createTaskWorker: \`${name}\` is required`);
    }
    if (typeof options.handler !== 'function') throw new TypeError('createTaskWorker: `handler` must be a function');
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    if (this.workerId.length < 1 || this.workerId.length > 200)
      throw new RangeError('createTaskWorker: `workerId` must be 1–200 characters');
    this.api = new TaskApi({
      url: options.url,
      token: options.token,
      workspace: options.workspace,
      queue: options.queue,
      requestTimeoutMs,
    });
    this.fetcher = new TaskFetcher(this.api, this.workerId, this.pollWaitMs, this.polling.signal, (task) => this.keepLease(task));
    this.completions = new CompletionBatcher(this.api, this.fetcher);
    this.log = withDefaults(options.logger === undefined ? stderrLogger : options.logger);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  get activeTasks(): number {
    return this.running.size;
  }

  start(): TaskWorker {
    if (this.state !== 'idle') return this;
    this.state = 'running';
    if (this.options.handleSignals ?? true) {
      process.on('SIGTERM', this.signalListener);
      process.on('SIGINT', this.signalListener);
    }
    if (this.options.signal) {
      if (this.options.signal.aborted) queueMicrotask(() => void this.stop({ timeoutMs: this.shutdownTimeoutMs }));
      else this.options.signal.addEventListener('abort', () => void this.stop({ timeoutMs: this.shutdownTimeoutMs }), { once: true });
    }
    const { queue, workspace } = this.options;
    this.log.info('task worker started', { workerId: this.workerId, workspace, queue, concurrency: this.concurrency });
    const slots = Array.from({ length: this.concurrency }, () => this.slot());
    void Promise.all(slots).then(() => this.finish());
    return this;
  }

  stop(options: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = Math.max(0, options.timeoutMs ?? 30_000);
    if (this.state === 'idle') {
      this.state = 'stopped';
      this.resolveDone();
      return this.done;
    }
    if (this.state === 'stopped') return this.done;
    if (this.state === 'running') {
      this.state = 'stopping';
      this.log.info('task worker stopping', { workerId: this.workerId, running: this.running.size, timeoutMs });
      this.polling.abort();
    }
    if (timeoutMs === 0) this.force();
    else this.forceTimers.push(setTimeout(() => this.force(), timeoutMs));
    return this.done;
  }

  private onSignal(): void {
    this.signalsSeen++;
    if (this.signalsSeen === 1) void this.stop({ timeoutMs: this.shutdownTimeoutMs });
    else this.force();
  }

  /** The stop's bound has passed: abort the handlers still running and give their tasks back. */
  private force(): void {
    if (this.forcedAt !== null || this.state === 'stopped') return;
    this.forcedAt = Date.now();
    this.polling.abort();
    for (const run of this.running) {
      if (run.finished) continue;
      this.log.warn('giving a task back: its handler did not finish in time', this.fields(run.task));
      const reason = new WorkerShutdownError(run.task.taskId);
      if (!run.controller.signal.aborted) run.controller.abort(reason);
      run.giveBack({ outcome: 'failed', error: toTaskFailure(reason) });
    }
  }

  private finish(): void {
    for (const timer of this.forceTimers) clearTimeout(timer);
    // Every slot drains the held tasks before it ends; should one be left, its lease simply runs out.
    for (const task of this.fetcher.discardAll()) this.log.warn('a held task was not run: its lease runs out', this.fields(task));
    process.off('SIGTERM', this.signalListener);
    process.off('SIGINT', this.signalListener);
    this.state = 'stopped';
    this.log.info('task worker stopped', { workerId: this.workerId });
    this.resolveDone();
  }

  /**
   * One unit of concurrency: poll while free, run what came, again until the worker stops. A
   * completion takes the slot's next task in the same request; the slot polls only when it got none.
   * The slots share requests (task-batching.ts): those free in the same turn ask in one poll, and
   * completions ready in the same turn go in one request, which also asks for tasks for the slots
   * waiting in a poll (handed to them at once). Tasks this worker holds are run even once it stops.
   */
  private async slot(): Promise<void> {
    let failures = 0;
    let next: PolledTask | null = null;
    // A task the last completion took is run even when the worker is stopping: it is this worker's now.
    while (next !== null || !this.polling.signal.aborted || this.fetcher.holding > 0) {
      let task: PolledTask | null = next;
      next = null;
      const began = Date.now();
      if (task !== null) {
        next = await this.runGuarded(task);
        continue;
      }
      try {
        task = await this.fetcher.take();
        failures = 0;
      } catch (error) {
        if (this.polling.signal.aborted) break;
        failures++;
        const delayMs = backoffDelay(failures, this.backoff, error instanceof TaskApiError ? error.retryAfterMs : null);
        const transient = error instanceof TaskApiError && error.transient;
        (transient ? this.log.warn : this.log.error)('poll failed; trying again', { error: message(error), failures, delayMs });
        await pause(delayMs, this.polling.signal);
        continue;
      }
      if (task === null) {
        if (Date.now() - began < EMPTY_POLL_FLOOR_MS) await pause(EMPTY_POLL_PAUSE_MS, this.polling.signal);
        continue;
      }
      next = await this.runGuarded(task);
    }
  }

  /** Runs a task; answers the next one its completion took, if any. */
  private async runGuarded(task: PolledTask): Promise<PolledTask | null> {
    try {
      return await this.run(task);
    } catch (error) {
      // run() handles every failure of the handler and of the calls; this would be a bug of its own.
      this.log.error('task worker: unexpected failure running a task', { ...this.fields(task), error: message(error) });
      return null;
    }
  }

  private async run(task: PolledTask): Promise<PolledTask | null> {
    let giveBack!: (completion: Completion) => void;
    const givenBack = new Promise<Completion>((resolve) => (giveBack = resolve));
    const run: RunningTask = {
      task,
      controller: new AbortController(),
      cancelled: false,
      leaseLost: false,
      finished: false,
      heartbeatFailures: 0,
      timer: null,
      giveBack,
    };
    this.running.add(run);
    this.log.debug('task received', this.fields(task));
    try {
      this.scheduleHeartbeat(run, task.heartbeatIntervalMs);
      // A task that arrives once a stop was forced is given back without running.
      if (this.forcedAt !== null) run.giveBack({ outcome: 'failed', error: toTaskFailure(new WorkerShutdownError(task.taskId)) });
      const ctx: TaskContext = {
        taskId: task.taskId,
        executionId: task.executionId,
        nodeId: task.nodeId,
        attempt: task.attempt,
        workerId: this.workerId,
        signal: run.controller.signal,
        heartbeat: (progress?: unknown) => this.heartbeat(run, progress),
      };
      const handled = this.forcedAt === null ? this.handle(run, ctx) : givenBack;
      const completion = await Promise.race([handled, givenBack]);
      if (run.leaseLost) {
        this.log.warn('task lost its lease while it ran: its result is not reported', this.fields(task));
        return null;
      }
      if (run.cancelled) {
        // The task was cancelled with its execution: a completion would be refused.
        this.log.info('task cancelled: its result is not reported', { ...this.fields(task), outcome: completion.outcome });
        return null;
      }
      return await this.complete(run, completion);
    } finally {
      run.finished = true;
      if (run.timer) clearTimeout(run.timer);
      this.running.delete(run);
    }
  }

  private async handle(run: RunningTask, ctx: TaskContext): Promise<Completion> {
    try {
      const output = await this.options.handler(run.task.input, ctx);
      if (output === undefined) return { outcome: 'succeeded' };
      try {
        JSON.stringify(output);
      } catch (error) {
        return { outcome: 'failed', error: { code: 'output_not_serializable', message: message(error), retryable: false } };
      }
      return { outcome: 'succeeded', output };
    } catch (error) {
      const failure = toTaskFailure(error);
      this.log.debug('task handler failed', { ...this.fields(run.task), code: failure.code, retryable: failure.retryable });
      return { outcome: 'failed', error: failure };
    }
  }

  private scheduleHeartbeat(run: RunningTask, delayMs: number): void {
    if (run.finished || run.leaseLost) return;
    if (run.timer) clearTimeout(run.timer);
    run.timer = setTimeout(() => {
      run.timer = null;
      this.heartbeat(run).catch(() => {
        // Logged, and the next one scheduled, by heartbeat() itself.
      });
    }, delayMs);
  }

  private async heartbeat(run: RunningTask, progress?: unknown): Promise<HeartbeatAnswer> {
    const { task } = run;
    if (run.leaseLost) throw new LeaseLostError(task.taskId, 'lease_lost');
    try {
      const body = { workerId: this.workerId, fencingToken: task.fencingToken, ...(progress === undefined ? {} : { progress }) };
      const answer = await this.api.heartbeat(task.taskId, body);
      run.heartbeatFailures = 0;
      if (answer.cancelRequested && !run.cancelled) {
        run.cancelled = true;
        this.log.info('task cancelled: aborting its handler', this.fields(task));
        if (!run.controller.signal.aborted) run.controller.abort(new TaskCancelledError(task.taskId));
      }
      this.scheduleHeartbeat(run, task.heartbeatIntervalMs);
      return answer;
    } catch (error) {
      if (error instanceof TaskApiError && error.leaseLost) {
        this.loseLease(run, error.code);
        throw new LeaseLostError(task.taskId, error.code);
      }
      run.heartbeatFailures++;
      const retryAfter = error instanceof TaskApiError ? error.retryAfterMs : null;
      const delayMs = Math.min(task.heartbeatIntervalMs, backoffDelay(run.heartbeatFailures, this.backoff, retryAfter));
      this.log.warn('heartbeat failed; trying again', { ...this.fields(task), error: message(error), delayMs });
      this.scheduleHeartbeat(run, delayMs);
      throw error;
    }
  }

  /**
   * Keeps the lease of a task held for a slot (TaskFetcher) until a slot takes it: heartbeats as a
   * running task's, from its receipt. Lost or cancelled meanwhile, it is dropped without running.
   */
  private keepLease(task: PolledTask): () => void {
    let timer: NodeJS.Timeout | null = null;
    let released = false;
    let failures = 0;
    const beat = (delayMs: number): void => {
      timer = setTimeout(() => {
        timer = null;
        this.api.heartbeat(task.taskId, { workerId: this.workerId, fencingToken: task.fencingToken }).then(
          (answer) => {
            failures = 0;
            if (released) return;
            if (!answer.cancelRequested) return beat(task.heartbeatIntervalMs);
            this.log.info('held task cancelled before it ran: dropping it', this.fields(task));
            this.fetcher.discard(task);
          },
          (error: unknown) => {
            if (released) return;
            if (error instanceof TaskApiError && error.leaseLost) {
              this.log.warn('held task lost its lease before it ran: dropping it', { ...this.fields(task), code: error.code });
              this.fetcher.discard(task);
              return;
            }
            failures++;
            const retryAfter = error instanceof TaskApiError ? error.retryAfterMs : null;
            const delay = Math.min(task.heartbeatIntervalMs, backoffDelay(failures, this.backoff, retryAfter));
            this.log.warn('heartbeat failed; trying again', { ...this.fields(task), error: message(error), delayMs: delay });
            beat(delay);
          },
        );
      }, delayMs);
    };
    this.log.debug('task held for the next free slot', this.fields(task));
    beat(task.heartbeatIntervalMs);
    return () => {
      released = true;
      if (timer) clearTimeout(timer);
    };
  }

  private loseLease(run: RunningTask, code: string): void {
    if (run.leaseLost) return;
    run.leaseLost = true;
    if (run.timer) clearTimeout(run.timer);
    run.timer = null;
    this.log.warn('task lease lost: aborting its handler', { ...this.fields(run.task), code });
    if (!run.controller.signal.aborted) run.controller.abort(new LeaseLostError(run.task.taskId, code));
  }

  /**
   * Reports the outcome; heartbeats go on meanwhile. Retried while the API cannot answer (the call
   * is idempotent by fencing token) until the lease is lost, or past the grace of a forced stop.
   * While the worker polls, the same request takes the slot's next task (answered, or null).
   */
  private async complete(run: RunningTask, completion: Completion): Promise<PolledTask | null> {
    const { task } = run;
    let body = { workerId: this.workerId, fencingToken: task.fencingToken, ...completion };
    for (let failures = 1; ; failures++) {
      try {
        const next = await this.completions.complete(task.taskId, { ...body, ...(this.polling.signal.aborted ? {} : { next: true }) });
        this.log.debug('task completed', { ...this.fields(task), outcome: completion.outcome, next: next?.taskId ?? null });
        return next;
      } catch (error) {
        if (!(error instanceof TaskApiError)) throw error;
        if (error.leaseLost) {
          this.log.warn('completion refused: the task is no longer this worker’s', { ...this.fields(task), code: error.code });
          return null;
        }
        if (error.status === 413 && body.outcome === 'succeeded') {
          // An output larger than a node's may be: the task fails for good rather than being run again.
          this.log.error('task output refused as too large: reporting the task failed', { ...this.fields(task), error: error.message });
          const failure = { code: 'output_too_large', message: error.message, retryable: false };
          body = { workerId: this.workerId, fencingToken: task.fencingToken, outcome: 'failed', error: failure };
          failures = 0;
          continue;
        }
        if (!error.transient) {
          this.log.error('completion refused', { ...this.fields(task), status: error.status, error: error.message });
          return null;
        }
        const remaining = this.forcedAt === null ? Infinity : this.forcedAt + GIVE_BACK_GRACE_MS - Date.now();
        if (run.leaseLost || remaining <= 0) {
          this.log.error('completion not reported', { ...this.fields(task), error: error.message });
          return null;
        }
        const delayMs = Math.min(remaining, backoffDelay(failures, this.backoff, error.retryAfterMs));
        this.log.warn('completion failed; trying again', { ...this.fields(task), error: error.message, delayMs });
        await pause(delayMs);
      }
    }
  }

  private fields(task: PolledTask): Record<string, unknown> {
    return { taskId: task.taskId, executionId: task.executionId, nodeId: task.nodeId, attempt: task.attempt };
  }
}

function integerOption(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`createTaskWorker: \`${name}\` must be an integer ${min}–${max}`);
  return value;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const stderrLogger: TaskWorkerLogger = {
  info: () => undefined,
  warn: (msg, fields) => writeLine('warn', msg, fields),
  error: (msg, fields) => writeLine('error', msg, fields),
};

function writeLine(level: string, msg: string, fields?: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
}

function withDefaults(logger: TaskWorkerLogger | null): Required<TaskWorkerLogger> {
  const silent = () => undefined;
  if (logger === null) return { debug: silent, info: silent, warn: silent, error: silent };
  return {
    debug: logger.debug?.bind(logger) ?? silent,
    info: logger.info.bind(logger),
    warn: logger.warn.bind(logger),
    error: logger.error.bind(logger),
  };
}
