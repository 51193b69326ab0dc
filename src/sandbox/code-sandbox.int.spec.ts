import { afterAll, describe, expect, it } from '@jest/globals';
import { CodeSandbox, type CodeLimits, type CodeOutcome } from './code-sandbox.js';

const sandbox = new CodeSandbox({ threads: 2 });
afterAll(() => sandbox.close());

const LIMITS: CodeLimits = { timeoutMs: 1_000, memoryMb: 16 };
const run = (source: string, input: unknown = {}, limits: Partial<CodeLimits> = {}, signal?: AbortSignal) =>
  sandbox.run(source, JSON.stringify(input), { ...LIMITS, ...limits }, { workspaceId: 'ws-a', signal });
const syntaxError = (source: string) => sandbox.syntaxError(source, { workspaceId: 'ws-a' });
const valueOf = (outcome: CodeOutcome): unknown => {
  if (outcome.kind !== 'value') throw new Error(`expected a value, got ${JSON.stringify(outcome)}`);
  return JSON.parse(outcome.json);
};

describe('CodeSandbox: JSON in, JSON out', () => {
  it('given a function body over input, when run, then its result comes back as JSON', async () => {
    const outcome = await run('return { total: input.items.reduce((a, b) => a + b, 0), name: input.name.toUpperCase() }', {
      items: [1, 2, 3],
      name: 'ada',
    });
    expect(valueOf(outcome)).toEqual({ total: 6, name: 'ADA' });
  });

  it('given code that returns null, a string or nested arrays, then each is returned as is', async () => {
    expect(valueOf(await run('return null'))).toBeNull();
    expect(valueOf(await run('return "text"'))).toBe('text');
    expect(valueOf(await run('return [[1], [2, [3]]]'))).toEqual([[1], [2, [3]]]);
  });

  it.each([
    ['undefined', 'return undefined', 'returned undefined'],
    ['nothing', 'const x = 1;', 'returned undefined'],
    ['a function', 'return () => 1', 'the result is a function'],
    ['a nested function', 'return { f() {} }', 'the value at "f" is a function'],
    ['a cycle', 'const a = {}; a.self = a; return a', 'the result is not JSON'],
    ['a BigInt', 'return { n: 10n }', 'the result is not JSON'],
    ['a Promise', 'return Promise.resolve(1)', 'returned a Promise'],
  ])('given code that returns %s, then it is an error naming why', async (_what, source, message) => {
    expect(await run(source)).toEqual({ kind: 'error', message: expect.stringContaining(message) });
  });

  it('given code that throws, then the error carries its name and message', async () => {
    expect(await run('throw new RangeError("amount must be positive")')).toEqual({
      kind: 'error',
      message: 'RangeError: amount must be positive',
    });
    expect(await run('throw "plain"')).toEqual({ kind: 'error', message: 'uncaught: plain' });
  });

  it('given a source that does not parse, then run and syntaxError both name the syntax error, and nothing runs', async () => {
    expect(await run('return 1 +')).toEqual({ kind: 'syntax_error', message: expect.stringMatching(/^SyntaxError: /) });
    expect(await syntaxError('return (')).toMatch(/^SyntaxError: /);
    expect(await syntaxError('for (;;) {}')).toBeNull();
  });

  it('given a source that closes its function early to reach the script around it, then syntaxError only compiles it: none of it runs', async () => {
    // Evaluated, the first would throw "it ran" and the second loop until the compile's deadline.
    expect(await syntaxError('}); throw new Error("it ran"); (function () {')).toBeNull();
    expect(await syntaxError('}); for (;;) {} (function () {')).toBeNull();
    expect(await syntaxError('}); return (; (function () {')).toMatch(/^SyntaxError: /);
    // It is the text QuickJS's Function constructor compiles for the run: the verdicts agree.
    expect(await run('}); throw new Error("it ran"); (function () {')).toEqual({ kind: 'syntax_error', message: 'Error: it ran' });
  });

  it('given code that replaces JSON.stringify, then only its own result can be affected', async () => {
    expect(valueOf(await run('JSON.stringify = () => "{"; JSON.parse = null; return { still: "json" }'))).toEqual({ still: 'json' });
  });
});

describe('CodeSandbox: limits', () => {
  it('given an infinite loop, then it times out at its limit and the thread serves the next run', async () => {
    expect(await run('for (;;) {}', {}, { timeoutMs: 100 })).toEqual({ kind: 'timeout' });
    expect(await run('while (true) { try { for (;;) {} } catch (e) {} }', {}, { timeoutMs: 100 })).toEqual({ kind: 'timeout' });
    expect(valueOf(await run('return 1'))).toBe(1);
  });

  it('given an allocation bomb, then it exceeds its memory and the next run is served', async () => {
    const bombs = [
      'const all = []; for (;;) all.push("x".repeat(1024) + all.length)',
      'const all = []; for (;;) all.push(new Array(1e4).fill(0))',
    ];
    for (const bomb of bombs) {
      expect(await run(bomb, {}, { memoryMb: 8, timeoutMs: 10_000 })).toEqual({ kind: 'memory_exceeded', message: 'out of memory' });
    }
    expect(await run('return new Array(1e9).fill(0)', {}, { memoryMb: 8, timeoutMs: 10_000 })).toMatchObject({ kind: 'memory_exceeded' });
    expect(valueOf(await run('return "after"'))).toBe('after');
    // Within the limit, the same allocations succeed.
    expect(
      valueOf(
        await run(
          'const all = []; for (let i = 0; i < 100; i++) all.push(new Array(1e4).fill(i)); return all.length',
          {},
          { memoryMb: 32 },
        ),
      ),
    ).toBe(100);
  });

  it('given runaway recursion, then it is a stack overflow error, not a crash', async () => {
    expect(await run('function f() { return f() + 1 } return f()')).toEqual({ kind: 'error', message: 'InternalError: stack overflow' });
    expect(valueOf(await run('return 2'))).toBe(2);
  });

  it('given a run whose signal aborts, then it ends cancelled', async () => {
    const controller = new AbortController();
    const outcome = run('for (;;) {}', {}, { timeoutMs: 10_000 }, controller.signal);
    setTimeout(() => controller.abort(), 50);
    expect(await outcome).toEqual({ kind: 'cancelled' });
  });

  it('given more runs than threads, then they wait their turn and all finish', async () => {
    const outcomes = await Promise.all([1, 2, 3, 4, 5].map((n) => run(`return input.n * 10`, { n })));
    expect(outcomes.map(valueOf)).toEqual([10, 20, 30, 40, 50]);
    expect(sandbox.stats().alive).toBeLessThanOrEqual(2);
  });
});

describe('CodeSandbox: no host access', () => {
  it('given code that looks for the host, then it finds nothing', async () => {
    const probe = `return {
      require: typeof require, process: typeof process, fetch: typeof fetch, module: typeof module,
      globalProcess: typeof globalThis.process, setTimeout: typeof setTimeout, Buffer: typeof Buffer,
      evalProcess: (0, eval)('typeof process'), functionProcess: Function('return typeof process')(),
      constructorProcess: (() => {}).constructor('return typeof process')(),
    }`;
    expect(valueOf(await run(probe))).toEqual({
      require: 'undefined',
      process: 'undefined',
      fetch: 'undefined',
      module: 'undefined',
      globalProcess: 'undefined',
      setTimeout: 'undefined',
      Buffer: 'undefined',
      evalProcess: 'undefined',
      functionProcess: 'undefined',
      constructorProcess: 'undefined',
    });
  });

  it('given a dynamic import, then it never resolves to a module', async () => {
    expect(valueOf(await run('const p = import("node:fs"); return typeof p.then'))).toBe('function');
    expect(await run('return import("node:fs")')).toEqual({ kind: 'error', message: expect.stringContaining('returned a Promise') });
  });

  it('given state left on the global object, then the next run does not see it', async () => {
    expect(valueOf(await run('globalThis.leak = 42; return 1'))).toBe(1);
    expect(valueOf(await run('return typeof globalThis.leak'))).toBe('undefined');
  });

  it('offers Date and Math.random (not deterministic)', async () => {
    expect(valueOf(await run('return [Date.now() > 0, Math.random() < 1]'))).toEqual([true, true]);
  });
});
