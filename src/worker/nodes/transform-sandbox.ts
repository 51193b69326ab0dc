import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import { NodeError } from '../dag/node-error.js';

/** Bounds on one evaluation of a transform expression. */
export interface TransformLimits {
  /** Wall-clock budget of one evaluation, from when an evaluator takes it (FLOSTRA_TRANSFORM_TIMEOUT_MS). */
  readonly timeoutMs: number;
  /** V8 heap (old generation) of each evaluator process (FLOSTRA_TRANSFORM_MEMORY_MB). */
  readonly memoryMb: number;
  /** Deepest JSONata evaluation stack (D1011: runaway recursion). */
  readonly maxDepth: number;
  /** Longest sequence an evaluation may build (D2015). */
  readonly maxSequence: number;
}

export interface TransformSandboxOptions extends TransformLimits {
  /** Evaluator processes at most (FLOSTRA_TRANSFORM_PROCESSES): evaluations beyond wait their turn. */
  readonly processes: number;
  /** How long a new evaluator may take to start. Default 30 s. */
  readonly startTimeoutMs?: number;
}

export const DEFAULT_TRANSFORM_SANDBOX: TransformSandboxOptions = {
  timeoutMs: 1_000,
  memoryMb: 64,
  maxDepth: 500,
  maxSequence: 100_000,
  processes: 2,
};

/** What the evaluator process answers for one task. */
type Answer =
  | { id: number; json: string | undefined }
  | { id: number; failed: 'parse' | 'evaluate' | 'result'; code?: string; message: string; rangeError?: boolean };

/** How one evaluation ended, as the sandbox saw it. */
type Outcome = { kind: 'answer'; answer: Answer } | { kind: 'timeout' } | { kind: 'ended'; outOfMemory: boolean; detail: string };

/**
 * The evaluator: a bare Node process (no environment, no flags of ours but its heap limit) that
 * evaluates JSONata for its parent over IPC. It reaches nothing but its input: JSONata has no
 * access to the process, and nothing is handed to eval or Function. The result travels back as
 * JSON text; functions and JSONata lambdas are dropped, as they cannot be JSON. When the parent
 * goes, so does it.
 */
const EVALUATOR = `
'use strict';
const jsonata = require(process.argv[1]);
const notJson = (value) =>
  typeof value === 'function' ||
  (typeof value === 'object' && value !== null && ('_jsonata_lambda' in value || '_jsonata_function' in value));
const fields = (error) => ({
  code: typeof error?.code === 'string' ? error.code : undefined,
  message: typeof error?.message === 'string' ? error.message : String(error),
  rangeError: error instanceof RangeError,
});
process.on('message', async ({ id, expression, input, limits }) => {
  let compiled;
  try {
    compiled = jsonata(expression, { timeout: limits.timeoutMs, stack: limits.maxDepth, sequence: limits.maxSequence });
  } catch (error) {
    return process.send({ id, failed: 'parse', ...fields(error) });
  }
  let result;
  try {
    result = await compiled.evaluate(input);
  } catch (error) {
    return process.send({ id, failed: 'evaluate', ...fields(error) });
  }
  let json;
  try {
    json = JSON.stringify(result, (_key, value) => (notJson(value) ? undefined : value));
  } catch (error) {
    return process.send({ id, failed: 'result', ...fields(error) });
  }
  process.send({ id, json });
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
`;

/** What V8 prints when a heap limit ends a process, and what it throws for too large a string or array. */
const OUT_OF_MEMORY = /heap out of memory|allocation failed|invalid (string|array|typed array) length|invalid size error/i;

/** One evaluator process: started on first use, replaced once it timed out or died. */
class Evaluator {
  private readonly child: ChildProcess;
  private readonly ready: Promise<void>;
  private stderr = '';
  private ended: { code: number | null; signal: string | null } | null = null;
  private readonly endListeners = new Set<() => void>();
  private nextId = 0;

  constructor(jsonataPath: string, memoryMb: number, startTimeoutMs: number) {
    this.child = spawn(process.execPath, [`--max-old-space-size=${memoryMb}`, '-e', EVALUATOR, jsonataPath], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
      env: {},
    });
    const stderr = this.child.stderr as Readable & { unref?: () => void };
    stderr.setEncoding('utf8');
    // Enough to tell a heap limit from another death.
    stderr.on('data', (chunk: string) => (this.stderr = (this.stderr + chunk).slice(-4_096)));
    this.child.once('close', (code, signal) => {
      this.ended = { code, signal };
      for (const listener of [...this.endListeners]) listener();
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`no answer within ${startTimeoutMs} ms`)), startTimeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        this.kill();
        reject(error);
      };
      this.child.once('error', fail);
      this.onEnd(() => fail(new Error(`it ended at once (${this.describeEnd()})`)));
      this.child.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.ready.catch(() => undefined);
    // Idle evaluators keep no process alive; an evaluation in flight holds its timer.
    this.child.unref();
    this.child.channel?.unref();
    stderr.unref?.();
  }

  get alive(): boolean {
    return this.ended === null && !this.child.killed;
  }

  /** Resolves once the process answered that it is ready; rejects if it could not start. */
  started(): Promise<void> {
    return this.ready;
  }

  /** Runs one evaluation; never rejects. A time-out kills the process: it is not used again. */
  run(expression: string, input: unknown, limits: TransformLimits): Promise<Outcome> {
    const id = this.nextId++;
    return new Promise<Outcome>((resolve) => {
      const settle = (outcome: Outcome) => {
        clearTimeout(timer);
        this.child.off('message', onMessage);
        this.endListeners.delete(onEnd);
        resolve(outcome);
      };
      const onMessage = (answer: Answer) => {
        if (answer.id === id) settle({ kind: 'answer', answer });
      };
      const onEnd = () => settle({ kind: 'ended', outOfMemory: OUT_OF_MEMORY.test(this.stderr), detail: this.describeEnd() });
      const timer = setTimeout(() => {
        this.kill();
        settle({ kind: 'timeout' });
      }, limits.timeoutMs);
      this.child.on('message', onMessage);
      if (this.ended !== null) return onEnd();
      this.onEnd(onEnd);
      // A task that cannot be sent leaves the process useless: its end settles the evaluation.
      this.child.send({ id, expression, input, limits }, (error) => {
        if (error) this.kill();
      });
    });
  }

  kill(): void {
    if (this.ended !== null) return;
    // Held until it is gone, so that whoever awaits its end (close) is not left behind an empty event loop.
    this.child.ref();
    this.child.kill('SIGKILL');
  }

  /** Resolves once the process is gone. */
  stopped(): Promise<void> {
    if (this.ended !== null) return Promise.resolve();
    return new Promise((resolve) => this.onEnd(resolve));
  }

  private onEnd(listener: () => void): void {
    this.endListeners.add(listener);
  }

  private describeEnd(): string {
    if (this.ended === null) return 'still running';
    const how = this.ended.signal !== null ? `signal ${this.ended.signal}` : `exit code ${this.ended.code}`;
    const said = this.stderr
      .split('\n')
      .map((line) => line.trim())
      .find((line) => /error/i.test(line));
    return said === undefined ? how : `${how}: ${said}`;
  }
}

/**
 * Runs transform expressions where a runaway cannot touch the worker's process: in a bounded
 * pool of evaluator processes, each with its own heap limit. JSONata checks its own time, depth
 * and sequence limits while it evaluates, but not inside a regular expression, which runs
 * natively and can take seconds per character; nor can anything inside a process stop an
 * allocation of hundreds of megabytes, which ends the whole process (a worker thread's
 * `resourceLimits` included: such an allocation aborts the process that owns the thread). So
 * an evaluation that outlives `timeoutMs` has its process killed (`transform_timeout`), one
 * whose process runs out of heap fails `transform_memory_exceeded`, and the pool starts a fresh
 * process for the next one. Neither is retryable: the same expression over the same input would
 * do the same. Every failure names its limit.
 */
export class TransformSandbox {
  private readonly options: TransformSandboxOptions;
  private readonly jsonataPath = createRequire(import.meta.url).resolve('jsonata');
  private readonly idle: Evaluator[] = [];
  private readonly evaluators = new Set<Evaluator>();
  private readonly waiting: { take: (evaluator: Evaluator) => void; signal: AbortSignal; onAbort: () => void }[] = [];
  private started = 0;

  constructor(options: Partial<TransformSandboxOptions> = {}) {
    this.options = { ...DEFAULT_TRANSFORM_SANDBOX, ...options };
  }

  /** Processes started so far, and alive now (for tests). */
  stats(): { started: number; alive: number } {
    return { started: this.started, alive: [...this.evaluators].filter((evaluator) => evaluator.alive).length };
  }

  /** The value of `expression` over `input`, as JSON (null for nothing); rejects with a NodeError. */
  async evaluate(expression: string, input: unknown, signal: AbortSignal): Promise<unknown> {
    signal.throwIfAborted();
    const evaluator = await this.acquire(signal);
    let outcome: Outcome;
    try {
      try {
        await evaluator.started();
      } catch (error) {
        throw new NodeError('transform_unavailable', `the transform evaluator could not start: ${(error as Error).message}`, true);
      }
      outcome = await evaluator.run(expression, input, this.options);
    } finally {
      this.release(evaluator);
    }
    return this.settle(outcome);
  }

  /**
   * Stops every evaluator process; evaluations still waiting fail (`transform_unavailable`). A
   * later evaluation starts new processes.
   */
  async close(): Promise<void> {
    for (const waiter of this.waiting.splice(0)) {
      waiter.signal.removeEventListener('abort', waiter.onAbort);
      waiter.onAbort();
    }
    const all = [...this.evaluators];
    for (const evaluator of all) evaluator.kill();
    this.idle.length = 0;
    this.evaluators.clear();
    await Promise.all(all.map((evaluator) => evaluator.stopped()));
  }

  private settle(outcome: Outcome): unknown {
    const { timeoutMs, memoryMb } = this.options;
    const timedOut = () =>
      new NodeError(
        'transform_timeout',
        `the expression ran longer than its limit of ${timeoutMs} ms (FLOSTRA_TRANSFORM_TIMEOUT_MS)`,
        false,
      );
    const outOfMemory = (detail: string) =>
      new NodeError(
        'transform_memory_exceeded',
        `the expression needed more than its limit of ${memoryMb} MB of memory (FLOSTRA_TRANSFORM_MEMORY_MB): ${detail}`,
        false,
      );
    switch (outcome.kind) {
      case 'timeout':
        throw timedOut();
      case 'ended':
        if (outcome.outOfMemory) throw outOfMemory(outcome.detail);
        throw new NodeError('transform_failed', `the transform evaluator ended unexpectedly (${outcome.detail})`, false);
      case 'answer':
        break;
    }
    const { answer } = outcome;
    if (!('failed' in answer)) return answer.json === undefined ? null : (JSON.parse(answer.json) as unknown);
    const detail = `${answer.code !== undefined ? `${answer.code} ` : ''}${answer.message}`;
    if (answer.code === 'D1012') throw timedOut();
    if (answer.rangeError === true && OUT_OF_MEMORY.test(answer.message)) throw outOfMemory(answer.message);
    switch (answer.failed) {
      case 'parse':
        throw new NodeError('transform_failed', `the expression does not parse: ${detail}`, false);
      case 'evaluate':
        throw new NodeError('transform_failed', `the expression failed: ${detail}`, false);
      case 'result':
        throw new NodeError('transform_failed', `the result is not JSON: ${detail}`, false);
    }
  }

  private acquire(signal: AbortSignal): Promise<Evaluator> {
    for (let idle = this.idle.pop(); idle !== undefined; idle = this.idle.pop()) {
      if (idle.alive) return Promise.resolve(idle);
      this.evaluators.delete(idle);
    }
    if (this.evaluators.size < this.options.processes) return Promise.resolve(this.spawn());
    return new Promise<Evaluator>((resolve, reject) => {
      const waiter = {
        signal,
        take: (evaluator: Evaluator) => {
          signal.removeEventListener('abort', waiter.onAbort);
          resolve(evaluator);
        },
        onAbort: () => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(signal.aborted ? signal.reason : new NodeError('transform_unavailable', 'the transform sandbox was closed', true));
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Hands the evaluator, or a fresh one in place of a dead one, to the next waiting evaluation. */
  private release(evaluator: Evaluator): void {
    if (!evaluator.alive) this.evaluators.delete(evaluator);
    const next = this.waiting.shift();
    if (next !== undefined) return next.take(evaluator.alive ? evaluator : this.spawn());
    if (evaluator.alive) this.idle.push(evaluator);
  }

  private spawn(): Evaluator {
    const evaluator = new Evaluator(this.jsonataPath, this.options.memoryMb, this.options.startTimeoutMs ?? 30_000);
    this.evaluators.add(evaluator);
    this.started++;
    return evaluator;
  }
}
