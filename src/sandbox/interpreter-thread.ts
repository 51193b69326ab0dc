import { Worker } from 'node:worker_threads';
import type { CodeOutcome } from './code-run.types.js';
import { INTERPRETER_SCRIPT } from './interpreter-script.js';

/**
 * The interpreter's own WebAssembly memory (its code's data, its stack, the heap it starts with):
 * not counted in a run's `memoryMb`, which is added on top as the memory's hard maximum.
 */
export const INTERPRETER_BASE_MB = 16;

export interface Task {
  readonly id: number;
  readonly op: 'run' | 'compile';
  readonly source: string;
  readonly input: string;
  readonly timeoutMs: number;
  readonly memoryMb: number;
}

type ThreadMessage = { ready: true } | { failedToStart: string } | { id: number; outcome: CodeOutcome };

/** One interpreter thread: it loads QuickJS once, then runs one task at a time, each in a fresh runtime. */
export class InterpreterThread {
  private readonly worker: Worker;
  private readonly cancel = new Int32Array(new SharedArrayBuffer(4));
  private readonly ready: Promise<void>;
  private exited = false;
  private stopping = false;
  private readonly exitListeners = new Set<() => void>();

  constructor(paths: { core: string; variant: string; wasm: string }, maxStackKb: number, startTimeoutMs: number) {
    this.worker = new Worker(INTERPRETER_SCRIPT, {
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
