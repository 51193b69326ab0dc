import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Bounds on one run of user code. */
export interface CodeLimits {
  /** Wall-clock budget of the run, from when an interpreter takes it. */
  readonly timeoutMs: number;
  /** Everything the interpreter allocates for the run (its heap, strings, stack frames). */
  readonly memoryMb: number;
}

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

/** How a run ended. Never a rejection: every failure of the code is one of these. */
export type CodeOutcome =
  /** The returned value, as JSON text. */
  | { readonly kind: 'value'; readonly json: string }
  /** The source is not a valid function body. */
  | { readonly kind: 'syntax_error'; readonly message: string }
  /** The code threw, or returned something that is not JSON. */
  | { readonly kind: 'error'; readonly message: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'memory_exceeded'; readonly message: string }
  /** The caller's signal aborted the run. */
  | { readonly kind: 'cancelled' }
  /** The interpreter itself failed (it could not start, or crashed): not the code's doing. */
  | { readonly kind: 'unavailable'; readonly message: string };

/**
 * The interpreter's own WebAssembly memory (its code's data, its stack, the heap it starts with):
 * not counted in a run's `memoryMb`, which is added on top as the memory's hard maximum.
 */
export const INTERPRETER_BASE_MB = 16;

/** The interpreter thread: a CommonJS script evaluated by Node, so it runs the same from the sources and from dist/. */
const INTERPRETER = `
'use strict';
const { readFileSync } = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const { newQuickJSWASMModuleFromVariant, newVariant } = require(workerData.core);
const variantModule = require(workerData.variant);
const variant = variantModule.default ?? variantModule;
const cancelled = new Int32Array(workerData.cancel);
const PAGE = 65536;

// Evaluated in each fresh context before the user's code: it keeps its own references to
// Function and JSON, so code that replaces them changes nothing but its own result.
const RUNNER = \`(function () {
  'use strict';
  const F = Function, stringify = JSON.stringify, parse = JSON.parse;
  const where = (key) => (key === '' ? 'the result' : 'the value at ' + stringify(key));
  const strict = function (key, value) {
    const type = typeof value;
    if (type === 'function' || type === 'symbol') throw new TypeError(where(key) + ' is a ' + type + ', not JSON');
    return value;
  };
  return {
    compile: (source) => new F('input', source),
    call: (fn, inputJson) => fn(parse(inputJson)),
    marshal: (value) => {
      if (value === undefined) throw new TypeError('the code returned undefined; return a JSON value (null for nothing)');
      if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
        throw new TypeError('the code returned a Promise; asynchronous code is not supported');
      }
      return stringify(value, strict);
    },
  };
})()\`;

function describe(context, handle) {
  try {
    const error = context.dump(handle);
    if (error !== null && typeof error === 'object' && typeof error.message === 'string') {
      return { name: String(error.name ?? 'Error'), message: error.message };
    }
    return { name: 'uncaught', message: typeof error === 'string' ? error : JSON.stringify(error) ?? String(error) };
  } catch {
    return { name: 'InternalError', message: 'the error could not be read' };
  }
}

// QuickJS's own memory limit cannot see the sizes of its allocations in this build (it counts
// allocations, not bytes), so memory is bounded where it cannot be escaped: each interpreter
// instance gets a WebAssembly memory whose maximum is its base plus the run's limit. Once it is
// full, allocations fail inside QuickJS ("out of memory"), and the host is never asked for more.
// One instance is kept, for the last limit used; another limit, or a broken instance, makes a new one.
const compiled = WebAssembly.compile(readFileSync(workerData.wasm));
let current = null;
async function interpreterFor(memoryMb) {
  if (current !== null && current.memoryMb === memoryMb) return current.QuickJS;
  current = null;
  const memory = new WebAssembly.Memory({
    initial: (workerData.baseMb * 1048576) / PAGE,
    maximum: ((workerData.baseMb + memoryMb) * 1048576) / PAGE,
  });
  const QuickJS = await newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmModule: await compiled, wasmMemory: memory }));
  current = { memoryMb, QuickJS };
  return QuickJS;
}

function evaluate(QuickJS, task) {
  const runtime = QuickJS.newRuntime();
  const handles = [];
  const keep = (handle) => (handles.push(handle), handle);
  let interrupted = null;
  let context;
  let outcome;
  try {
    // Refuses single allocations beyond the limit at once (the memory's maximum bounds the total).
    runtime.setMemoryLimit(task.memoryMb * 1048576);
    runtime.setMaxStackSize(workerData.maxStackBytes);
    const deadline = Date.now() + task.timeoutMs;
    runtime.setInterruptHandler(() => {
      if (Atomics.load(cancelled, 0) === task.id) interrupted = 'cancelled';
      else if (Date.now() > deadline) interrupted = 'timeout';
      return interrupted !== null;
    });
    context = runtime.newContext();
    const failed = (phase, handle) => {
      keep(handle);
      if (interrupted !== null) return { kind: interrupted };
      const { name, message } = describe(context, handle);
      if (name === 'InternalError' && message === 'out of memory') return { kind: 'memory_exceeded', message };
      if (phase === 'compile') return { kind: 'syntax_error', message: name + ': ' + message };
      if (phase === 'marshal') return { kind: 'error', message: 'the result is not JSON: ' + name + ': ' + message };
      return { kind: 'error', message: name + ': ' + message };
    };
    outcome = (() => {
      const runner = keep(context.unwrapResult(context.evalCode(RUNNER, 'runner.js')));
      const compile = keep(context.getProp(runner, 'compile'));
      const compiled = context.callFunction(compile, context.undefined, keep(context.newString(task.source)));
      if (compiled.error) return failed('compile', compiled.error);
      keep(compiled.value);
      if (task.op === 'compile') return { kind: 'value', json: 'null' };
      const call = keep(context.getProp(runner, 'call'));
      const called = context.callFunction(call, context.undefined, compiled.value, keep(context.newString(task.input)));
      if (called.error) return failed('call', called.error);
      keep(called.value);
      const marshal = keep(context.getProp(runner, 'marshal'));
      const marshalled = context.callFunction(marshal, context.undefined, called.value);
      if (marshalled.error) return failed('marshal', marshalled.error);
      return { kind: 'value', json: context.getString(keep(marshalled.value)) };
    })();
  } catch (error) {
    // The interpreter itself failed (its WebAssembly aborted, or it had no memory left to start).
    current = null;
    const message = String((error && error.message) || error);
    outcome = /out of memory/i.test(message)
      ? { kind: 'memory_exceeded', message }
      : { kind: 'error', message: 'the interpreter failed: ' + message };
  }
  try {
    for (const handle of handles.reverse()) if (handle.alive) handle.dispose();
    context?.dispose();
    runtime.dispose();
  } catch {
    // An instance that cannot free a runtime is not used again; the run's outcome stands.
    current = null;
  }
  // Its memory grew to the maximum and never shrinks: a fresh instance next time gives it back.
  if (outcome.kind === 'memory_exceeded') current = null;
  return outcome;
}

let queue = Promise.resolve();
parentPort.on('message', (task) => {
  queue = queue.then(async () => {
    let outcome;
    try {
      outcome = evaluate(await interpreterFor(task.memoryMb), task);
    } catch (error) {
      outcome = { kind: 'unavailable', message: String((error && error.message) || error) };
    }
    parentPort.postMessage({ id: task.id, outcome });
  });
});
interpreterFor(workerData.warmMemoryMb).then(
  () => parentPort.postMessage({ ready: true }),
  (error) => {
    parentPort.postMessage({ failedToStart: String((error && error.message) || error) });
    process.exit(1);
  },
);
`;

interface Task {
  readonly id: number;
  readonly op: 'run' | 'compile';
  readonly source: string;
  readonly input: string;
  readonly timeoutMs: number;
  readonly memoryMb: number;
}

type ThreadMessage = { ready: true } | { failedToStart: string } | { id: number; outcome: CodeOutcome };

/** One interpreter thread: it loads QuickJS once, then runs one task at a time, each in a fresh runtime. */
class InterpreterThread {
  private readonly worker: Worker;
  private readonly cancel = new Int32Array(new SharedArrayBuffer(4));
  private readonly ready: Promise<void>;
  private exited = false;
  private stopping = false;
  private readonly exitListeners = new Set<() => void>();

  constructor(paths: { core: string; variant: string; wasm: string }, maxStackKb: number, startTimeoutMs: number) {
    this.worker = new Worker(INTERPRETER, {
      eval: true,
      workerData: { ...paths, cancel: this.cancel.buffer, maxStackBytes: maxStackKb * 1024, baseMb: INTERPRETER_BASE_MB, warmMemoryMb: 32 },
      env: {},
      argv: [],
      execArgv: [],
      stdout: true,
      stderr: true,
      // The interpreter's stack lives on this thread's: room for the deepest stack QuickJS allows, and more.
      resourceLimits: { stackSizeMb: Math.max(4, Math.ceil((maxStackKb * 8) / 1024)) },
    });
    this.worker.once('exit', () => {
      this.exited = true;
      for (const listener of [...this.exitListeners]) listener();
    });
    this.worker.on('error', () => undefined);
    // Nothing is expected on them but what a failing interpreter prints; read and dropped.
    this.worker.stdout.resume();
    this.worker.stderr.resume();
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`no answer within ${startTimeoutMs} ms`)), startTimeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        this.worker.off('message', onMessage);
        void this.terminate();
        reject(error);
      };
      const onMessage = (message: ThreadMessage) => {
        if ('failedToStart' in message) return fail(new Error(message.failedToStart));
        if (!('ready' in message)) return;
        clearTimeout(timer);
        this.worker.off('message', onMessage);
        resolve();
      };
      this.worker.on('message', onMessage);
      this.onExit(() => fail(new Error('it ended at once')));
    });
    this.ready.catch(() => undefined);
    // Idle threads keep no process alive; a run in flight holds its timer.
    this.worker.unref();
  }

  /** Neither ended nor being ended. */
  get alive(): boolean {
    return !this.exited && !this.stopping;
  }

  started(): Promise<void> {
    return this.ready;
  }

  /** Runs one task; never rejects. A thread that does not answer in time is terminated. */
  run(task: Task, signal: AbortSignal | undefined, graceMs: number): Promise<CodeOutcome> {
    return new Promise<CodeOutcome>((resolve) => {
      let hardTimer: NodeJS.Timeout | undefined;
      const settle = (outcome: CodeOutcome) => {
        clearTimeout(hardTimer);
        this.worker.off('message', onMessage);
        this.exitListeners.delete(onExit);
        signal?.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      const onMessage = (message: ThreadMessage) => {
        if ('id' in message && message.id === task.id) settle(message.outcome);
      };
      const onExit = () => settle({ kind: 'unavailable', message: 'the interpreter thread ended during the run' });
      // The interpreter stops itself (its interrupt handler reads the deadline and the cancel flag);
      // a thread that does not answer within the grace period is stuck outside it and is ended.
      const stopAfter = (ms: number, outcome: CodeOutcome) => {
        clearTimeout(hardTimer);
        hardTimer = setTimeout(() => {
          void this.terminate();
          settle(outcome);
        }, ms);
      };
      const onAbort = () => {
        Atomics.store(this.cancel, 0, task.id);
        stopAfter(graceMs, { kind: 'cancelled' });
      };
      if (this.exited) return onExit();
      this.worker.on('message', onMessage);
      this.onExit(onExit);
      stopAfter(task.timeoutMs + graceMs, { kind: 'timeout' });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      this.worker.postMessage(task);
    });
  }

  terminate(): Promise<void> {
    this.stopping = true;
    if (this.exited) return Promise.resolve();
    return this.worker.terminate().then(() => undefined);
  }

  private onExit(listener: () => void): void {
    this.exitListeners.add(listener);
  }
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
