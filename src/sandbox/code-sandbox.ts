import { createRequire } from 'node:module';
import type { CodeLimits, CodeOutcome } from './code-run.types.js';
import { InterpreterThread, type Task } from './interpreter-thread.js';

export type { CodeLimits, CodeOutcome } from './code-run.types.js';
export { INTERPRETER_BASE_MB } from './interpreter-thread.js';

export interface CodeSandboxOptions {
  /** Interpreter threads at most: runs beyond wait their turn. Default 2. */
  readonly threads?: number;
  /** Deepest the interpreter's own stack may grow, in KiB. Default 256. */
  readonly maxStackKb?: number;
  /** How long a thread gets, past a run's time limit, to answer before it is terminated. Default 2 s. */
  readonly graceMs?: number;
  /** How long a new thread may take to load the interpreter. Default 30 s. */
  readonly startTimeoutMs?: number;
}

/**
 * Runs untrusted JavaScript in QuickJS compiled to WebAssembly (quickjs-emscripten): the code
 * sees an ECMAScript global object and nothing of the host — no require, process, fetch, file
 * system, network or timers. Each run gets a fresh QuickJS runtime and context with its own stack
 * limit and an interrupt handler that stops it at its deadline or when its caller aborts; its
 * memory is bounded by the WebAssembly memory it runs in (`INTERPRETER_BASE_MB` plus its
 * `memoryMb`); input goes in and the result comes out as JSON text only. The interpreters run on
 * a small pool of worker threads, so a run that loops until its deadline never blocks the
 * caller's event loop; a thread that stops answering is terminated and replaced.
 */
export class CodeSandbox {
  private readonly paths: { core: string; variant: string; wasm: string };
  private readonly threads: number;
  private readonly maxStackKb: number;
  private readonly graceMs: number;
  private readonly startTimeoutMs: number;
  private readonly idle: InterpreterThread[] = [];
  private readonly all = new Set<InterpreterThread>();
  private readonly waiting: { take: (thread: InterpreterThread) => void; signal?: AbortSignal; onAbort: () => void }[] = [];
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
  }

  /** Threads started so far, and alive now (for tests). */
  stats(): { started: number; alive: number } {
    return { started: this.started, alive: [...this.all].filter((thread) => thread.alive).length };
  }

  /** Runs `source`, the body of a function of `input`, over `inputJson`. */
  run(source: string, inputJson: string, limits: CodeLimits, signal?: AbortSignal): Promise<CodeOutcome> {
    return this.submit('run', source, inputJson, limits, signal);
  }

  /** Compiles `source` as a function body without running it: the syntax error's message, or null. */
  async syntaxError(source: string): Promise<string | null> {
    const outcome = await this.submit('compile', source, 'null', { timeoutMs: 1_000, memoryMb: 64 });
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
    for (const waiter of this.waiting.splice(0)) {
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.onAbort();
    }
    const all = [...this.all];
    this.idle.length = 0;
    this.all.clear();
    await Promise.all(all.map((thread) => thread.terminate()));
  }

  private async submit(op: Task['op'], source: string, input: string, limits: CodeLimits, signal?: AbortSignal): Promise<CodeOutcome> {
    if (signal?.aborted) return { kind: 'cancelled' };
    const thread = await this.acquire(signal);
    if (thread === null) return signal?.aborted ? { kind: 'cancelled' } : { kind: 'unavailable', message: 'the sandbox was closed' };
    let outcome: CodeOutcome;
    try {
      try {
        await thread.started();
      } catch (error) {
        return { kind: 'unavailable', message: `the interpreter could not start: ${(error as Error).message}` };
      }
      const task: Task = { id: this.nextId++, op, source, input, timeoutMs: limits.timeoutMs, memoryMb: limits.memoryMb };
      outcome = await thread.run(task, signal, this.graceMs);
    } finally {
      this.release(thread);
    }
    return outcome;
  }

  private acquire(signal?: AbortSignal): Promise<InterpreterThread | null> {
    for (let idle = this.idle.pop(); idle !== undefined; idle = this.idle.pop()) {
      if (idle.alive) return Promise.resolve(idle);
      this.all.delete(idle);
    }
    if (this.all.size < this.threads) return Promise.resolve(this.spawn());
    return new Promise<InterpreterThread | null>((resolve) => {
      const waiter = {
        signal,
        take: (thread: InterpreterThread) => {
          signal?.removeEventListener('abort', waiter.onAbort);
          resolve(thread);
        },
        onAbort: () => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          resolve(null);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Hands the thread, or a fresh one in place of an ended one, to the next waiting run. */
  private release(thread: InterpreterThread): void {
    const usable = thread.alive;
    if (!usable) this.all.delete(thread);
    const next = this.waiting.shift();
    if (next !== undefined) return next.take(usable ? thread : this.spawn());
    if (usable) this.idle.push(thread);
  }

  private spawn(): InterpreterThread {
    const thread = new InterpreterThread(this.paths, this.maxStackKb, this.startTimeoutMs);
    this.all.add(thread);
    this.started++;
    return thread;
  }
}
