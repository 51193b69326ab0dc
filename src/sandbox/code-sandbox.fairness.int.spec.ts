import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { CodeSandbox, type CodeLimits, type CodeOutcome } from './code-sandbox.js';

// Two interpreter threads, as a worker has by default; a sandbox of its own for each test, since a
// workspace that ran code stays active for the CPU window.
let sandbox: CodeSandbox;
beforeEach(() => {
  sandbox = new CodeSandbox({ threads: 2 });
});
afterEach(() => sandbox.close());

const LIMITS: CodeLimits = { timeoutMs: 1_000, memoryMb: 16 };
/** Long enough that only the test's release ends a holding run. */
const HOLD_LIMITS: CodeLimits = { timeoutMs: 600_000, memoryMb: 16 };

/** The order in which threads took runs, and the next one to take one. */
function startLog() {
  const names: string[] = [];
  let waiting: ((name: string) => void) | undefined;
  return {
    names,
    record: (name: string) => () => {
      names.push(name);
      waiting?.(name);
    },
    next: () => new Promise<string>((resolve) => (waiting = resolve)),
  };
}

/** A run that loops until the test releases it: it holds its thread for as long as the test wants. */
function holding(log: ReturnType<typeof startLog>, workspaceId: string, name: string, dropIfWaiting?: AbortSignal) {
  const controller = new AbortController();
  let began!: () => void;
  const started = new Promise<void>((resolve) => (began = resolve));
  const record = log.record(name);
  const outcome = sandbox.run('for (;;) {}', '{}', HOLD_LIMITS, {
    workspaceId,
    signal: controller.signal,
    dropIfWaiting,
    onStart: () => {
      record();
      began();
    },
  });
  return { outcome, started, release: () => controller.abort() };
}

const valueOf = (outcome: CodeOutcome): unknown => {
  if (outcome.kind !== 'value') throw new Error(`expected a value, got ${JSON.stringify(outcome)}`);
  return JSON.parse(outcome.json);
};

describe('CodeSandbox: threads shared between workspaces', () => {
  it('given ws-a holding both threads with six runs waiting, when ws-b submits a run, then it starts before ws-a’s third', async () => {
    const log = startLog();
    const a = Array.from({ length: 8 }, (_, i) => holding(log, 'ws-a', `a${i + 1}`));
    await Promise.all([a[0].started, a[1].started]);
    expect(log.names).toEqual(['a1', 'a2']);
    const b = sandbox.run('return 42', '{}', LIMITS, { workspaceId: 'ws-b', onStart: log.record('b1') });

    const next = log.next();
    a[0].release();
    expect(await next).toBe('b1');
    expect(valueOf(await b)).toBe(42);
    expect(await a[0].outcome).toEqual({ kind: 'cancelled' });

    // ws-b ran code within the CPU window: ws-a keeps to one thread, so b1's stays free for ws-b's
    // next run. Released while they wait, a3 to a8 leave their queue and never start.
    const b2 = sandbox.run('return 43', '{}', LIMITS, { workspaceId: 'ws-b', onStart: log.record('b2') });
    expect(valueOf(await b2)).toBe(43);
    for (const run of a.slice(2).reverse()) run.release();
    a[1].release();
    expect(await Promise.all(a.map((run) => run.outcome))).toEqual(a.map(() => ({ kind: 'cancelled' })));
    expect(log.names).toEqual(['a1', 'a2', 'b1', 'b2']);
  });

  it('given runs waiting for a thread, when their dropIfWaiting aborts, then they end dropped and never start; running ones go on', async () => {
    const log = startLog();
    const drop = new AbortController();
    const running = [holding(log, 'ws-a', 'x1', drop.signal), holding(log, 'ws-a', 'x2', drop.signal)];
    await Promise.all(running.map((run) => run.started));
    const waiting = ['x3', 'x4', 'x5'].map((name) =>
      sandbox.run('return 1', '{}', LIMITS, { workspaceId: 'ws-a', dropIfWaiting: drop.signal, onStart: log.record(name) }),
    );

    drop.abort();
    expect(await Promise.all(waiting)).toEqual([{ kind: 'dropped' }, { kind: 'dropped' }, { kind: 'dropped' }]);
    // The running ones were not stopped by it: only their own release ends them.
    const after = sandbox.run('return "next"', '{}', LIMITS, { workspaceId: 'ws-b', onStart: log.record('y1') });
    for (const run of running) run.release();
    expect(await Promise.all(running.map((run) => run.outcome))).toEqual([{ kind: 'cancelled' }, { kind: 'cancelled' }]);
    expect(valueOf(await after)).toBe('next');
    expect(log.names).toEqual(['x1', 'x2', 'y1']);
  });

  it('given a workspace over its CPU budget, then a workspace within its budget that queued later starts first', async () => {
    const budgeted = new CodeSandbox({ threads: 1, cpuBudgetMs: 10, cpuWindowMs: 3_600_000 });
    try {
      // A loop until its own 100 ms deadline: ws-a uses ten times its budget, refilled only over an hour.
      expect(await budgeted.run('for (;;) {}', '{}', { timeoutMs: 100, memoryMb: 16 }, { workspaceId: 'ws-a' })).toEqual({
        kind: 'timeout',
      });
      const log = startLog();
      const release = new AbortController();
      let held!: () => void;
      const holding = new Promise<void>((resolve) => (held = resolve));
      const hold = budgeted.run('for (;;) {}', '{}', HOLD_LIMITS, {
        workspaceId: 'ws-c',
        signal: release.signal,
        onStart: held,
      });
      await holding;
      const a = budgeted.run('return "a"', '{}', LIMITS, { workspaceId: 'ws-a', onStart: log.record('a') });
      const b = budgeted.run('return "b"', '{}', LIMITS, { workspaceId: 'ws-b', onStart: log.record('b') });

      release.abort();
      expect(await hold).toEqual({ kind: 'cancelled' });
      expect([valueOf(await a), valueOf(await b)]).toEqual(['a', 'b']);
      expect(log.names).toEqual(['b', 'a']);
    } finally {
      await budgeted.close();
    }
  });
});
