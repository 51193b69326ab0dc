import { createRequire } from 'node:module';
import { type Clock, systemClock } from '../core/clock.port.js';
import { CodeRunScheduler } from './code-run-scheduler.js';
import type { CodeLimits, CodeOutcome, CodeRunContext } from './code-run.types.js';
import { InterpreterThread, type Task } from './interpreter-thread.js';

export type { CodeLimits, CodeOutcome, CodeRunContext } from './code-run.types.js';
export { INTERPRETER_BASE_MB } from './interpreter-thread.js';

export interface CodeSandboxOptions {
  /** Interpreter threads at most: runs beyond wait their turn. Default 2. */
  readonly threads?: number;
  /** Interpreter time a workspace may use per `cpuWindowMs` before its runs yield to others'. Default 30 s. */
  readonly cpuBudgetMs?: number;
  /** The window over which the budget refills. Default 60 s. */
  readonly cpuWindowMs?: number;
  /** Deepest the interpreter's own stack may grow, in KiB. Default 256. */
  readonly maxStackKb?: number;
  /** How long a thread gets, past a run's time limit, to answer before it is terminated. Default 2 s. */
  readonly graceMs?: number;
  /** How long a new thread may take to load the interpreter. Default 30 s. */
  readonly startTimeoutMs?: number;
  /** Measures how long each run held its thread (the CPU budget). */
  readonly clock?: Clock;
}

/** A run waiting for a thread. */
interface Waiter {
  readonly context: CodeRunContext;
  take(thread: InterpreterThread): void;
  leave(outcome: CodeOutcome): void;
}

/**
 * Runs untrusted JavaScript in QuickJS compiled to WebAssembly (quickjs-emscripten): the code
 * sees an ECMAScript global object and nothing of the host — no require, process, fetch, file
 * system, network or timers. Each run gets a fresh QuickJS runtime and context with its own stack
 * limit and an interrupt handler that stops it at its deadline or when its caller aborts; its
 * memory is bounded by the WebAssembly memory it runs in (`INTERPRETER_BASE_MB` plus its
 * `memoryMb`); input goes in and the result comes out as JSON text only. The interpreters run on
 * a small pool of worker threads, so a run that loops until its deadline never blocks the
 * caller's event loop; a thread that stops answering is terminated and replaced. Runs beyond the
 * pool wait in one queue per workspace, and a free thread takes the next run as
 * `CodeRunScheduler` decides (promise 13).
 */
export class CodeSandbox {
  private readonly paths: { core: string; variant: string; wasm: string };
  private readonly threads: number;
  private readonly maxStackKb: number;
  private readonly graceMs: number;
  private readonly startTimeoutMs: number;
  private readonly clock: Clock;
  private readonly scheduler: CodeRunScheduler<Waiter>;
  private readonly idle: InterpreterThread[] = [];
  private readonly all = new Set<InterpreterThread>();
  private nextId = 1;
  private started = 0;

  constructor(options: CodeSandboxOptions = {}) {
    const require = createRequire(import.meta.url);
    this.paths = {
      core: require.resolve('quickjs-emscripten-core'),
      variant: require.resolve('@jitl/quickjs-wasmfile-release-sync'),
      wasm: require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'),
    };
    this.threads = options.threads ?? 2;
    this.maxStackKb = options.maxStackKb ?? 256;
    this.graceMs = options.graceMs ?? 2_000;
    this.startTimeoutMs = options.startTimeoutMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
    this.scheduler = new CodeRunScheduler({
      threads: this.threads,
      cpuBudgetMs: options.cpuBudgetMs ?? 30_000,
      cpuWindowMs: options.cpuWindowMs ?? 60_000,
    });
  }

  /** Threads started so far, and alive now (for tests). */
  stats(): { started: number; alive: number } {
    return { started: this.started, alive: [...this.all].filter((thread) => thread.alive).length };
  }

  /** Runs `source`, the body of a function of `input`, over `inputJson`. */
  run(source: string, inputJson: string, limits: CodeLimits, context: CodeRunContext): Promise<CodeOutcome> {
    return this.submit('run', source, inputJson, limits, context);
  }

  /**
   * Compiles `source` as a function body without running any of it: the syntax error's message,
   * or null. Rejects when the compile did not happen (`context.signal` aborted, or no interpreter).
   */
  async syntaxError(source: string, context: CodeRunContext): Promise<string | null> {
    const outcome = await this.submit('compile', source, 'null', { timeoutMs: 1_000, memoryMb: 64 }, context);
    switch (outcome.kind) {
      case 'value':
        return null;
      case 'syntax_error':
        return outcome.message;
      case 'memory_exceeded':
        return 'the source is too large to compile';
      case 'timeout':
        return 'the source takes too long to compile';
      default:
        throw new Error(`the code could not be compiled: ${'message' in outcome ? outcome.message : outcome.kind}`);
    }
  }

  /** Ends every thread; runs still waiting for one end `unavailable`. Later runs start new threads. */
  async close(): Promise<void> {
    for (const waiter of this.scheduler.drain()) waiter.leave({ kind: 'unavailable', message: 'the sandbox was closed' });
    const all = [...this.all];
    this.idle.length = 0;
    this.all.clear();
    await Promise.all(all.map((thread) => thread.terminate()));
  }

  private async submit(op: Task['op'], source: string, input: string, limits: CodeLimits, context: CodeRunContext): Promise<CodeOutcome> {
    if (context.signal?.aborted) return { kind: 'cancelled' };
    if (context.dropIfWaiting?.aborted) return { kind: 'dropped' };
    const thread = await this.acquire(context);
    if (!(thread instanceof InterpreterThread)) return thread;
    // What the workspace is charged: from when its code could begin, not the thread's own start.
    let startedAt = this.clock.now().getTime();
    try {
      context.onStart?.();
      try {
        await thread.started();
      } catch (error) {
        return { kind: 'unavailable', message: `the interpreter could not start: ${(error as Error).message}` };
      }
      if (context.signal?.aborted) return { kind: 'cancelled' };
      startedAt = this.clock.now().getTime();
      const task: Task = { id: this.nextId++, op, source, input, timeoutMs: limits.timeoutMs, memoryMb: limits.memoryMb };
      return await thread.run(task, context.signal, this.graceMs);
    } finally {
      this.release(thread, context.workspaceId, startedAt);
    }
  }

  /** A thread for the run once the scheduler gives it one, or how it ended while it waited. */
  private acquire(context: CodeRunContext): Promise<InterpreterThread | CodeOutcome> {
    const { workspaceId, signal, dropIfWaiting } = context;
    return new Promise((resolve) => {
      const stopListening = () => {
        signal?.removeEventListener('abort', onAbort);
        dropIfWaiting?.removeEventListener('abort', onDrop);
      };
      const waiter: Waiter = {
        context,
        take: (thread) => {
          stopListening();
          resolve(thread);
        },
        leave: (outcome) => {
          stopListening();
          resolve(outcome);
        },
      };
      // Promise 13 (docs/architecture.md): a run that may no longer start leaves its queue and never takes a thread.
      const onAbort = () => this.scheduler.remove(workspaceId, waiter) && waiter.leave({ kind: 'cancelled' });
      const onDrop = () => this.scheduler.remove(workspaceId, waiter) && waiter.leave({ kind: 'dropped' });
      signal?.addEventListener('abort', onAbort, { once: true });
      dropIfWaiting?.addEventListener('abort', onDrop, { once: true });
      this.scheduler.enqueue(workspaceId, waiter);
      this.dispatch();
    });
  }

  /** Returns the thread (or drops an ended one) and hands free threads to the runs the scheduler picks. */
  private release(thread: InterpreterThread, workspaceId: string, startedAt: number): void {
    const now = this.clock.now().getTime();
    this.scheduler.finished(workspaceId, now - startedAt, now);
    if (thread.alive) this.idle.push(thread);
    else this.all.delete(thread);
    this.dispatch();
  }

  private dispatch(): void {
    while (this.scheduler.waiting > 0) {
      const thread = this.freeThread();
      if (thread === null) return;
      const next = this.scheduler.next(this.clock.now().getTime());
      if (next === undefined) return void this.idle.push(thread);
      next.run.take(thread);
    }
  }

  /** An idle thread that is alive, or a new one while the pool is not full. */
  private freeThread(): InterpreterThread | null {
    for (let idle = this.idle.pop(); idle !== undefined; idle = this.idle.pop()) {
      if (idle.alive) return idle;
      this.all.delete(idle);
    }
    if (this.all.size >= this.threads) return null;
    const thread = new InterpreterThread(this.paths, this.maxStackKb, this.startTimeoutMs);
    this.all.add(thread);
    this.started++;
    return thread;
  }
}
