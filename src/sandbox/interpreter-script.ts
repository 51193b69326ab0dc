/** The interpreter thread: a CommonJS script evaluated by Node, so it runs the same from the sources and from dist/. */
export const INTERPRETER_SCRIPT = `
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
      if (task.op === 'compile') {
        // Compiled, never evaluated: the text QuickJS's Function constructor evaluates for the
        // run (quickjs.c, js_function_constructor), so a source has the same verdict here as when it
        // runs, and one that closes the function early to reach the script around it is only parsed.
        const text = '(function anonymous(input\\n) {\\n' + task.source + '\\n})';
        const parsed = context.evalCode(text, 'source.js', { type: 'global', compileOnly: true });
        if (parsed.error) return failed('compile', parsed.error);
        keep(parsed.value);
        return { kind: 'value', json: 'null' };
      }
      const runner = keep(context.unwrapResult(context.evalCode(RUNNER, 'runner.js')));
      const compile = keep(context.getProp(runner, 'compile'));
      const compiled = context.callFunction(compile, context.undefined, keep(context.newString(task.source)));
      if (compiled.error) return failed('compile', compiled.error);
      keep(compiled.value);
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
    const message = String((error && error.message) || error);
    if (interrupted !== null) {
      // Stopped before the user's code began (a run cancelled as it started): the instance is sound.
      outcome = { kind: interrupted };
    } else {
      // The interpreter itself failed (its WebAssembly aborted, or it had no memory left to start).
      current = null;
      outcome = /out of memory/i.test(message)
        ? { kind: 'memory_exceeded', message }
        : { kind: 'error', message: 'the interpreter failed: ' + message };
    }
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
