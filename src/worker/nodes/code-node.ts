import type { CodeSandbox } from '../../sandbox/code-sandbox.js';
import { NodeError, NodeNotStartedError } from '../dag/node-error.js';
import type { NodeExecutor } from './node-executor.js';

/**
 * Runs the node's JavaScript (`config.source`, the body of a function of `input`) in the QuickJS
 * sandbox (src/sandbox/code-sandbox.ts) over the node's input (`{ input, nodes }`), handed in as
 * JSON; the output is the function's return value, as JSON. Failures are not retryable, as the
 * same code over the same input fails the same way: `code_error` (a syntax error, a throw, a
 * result that is not JSON), `code_timeout` and `code_memory_exceeded`, each naming its limit.
 * `code_unavailable` (retryable) means the interpreter itself could not run. Runs share the
 * sandbox's threads by workspace (`ctx.workspaceId`); one still waiting for a thread when
 * `ctx.dropIfWaiting` aborts never starts.
 */
export function createCodeNode(sandbox: CodeSandbox): NodeExecutor<'code'> {
  return async (node, ctx) => {
    const { source, timeoutMs, memoryMb } = node.config;
    const outcome = await sandbox.run(
      source,
      JSON.stringify(ctx.input),
      { timeoutMs, memoryMb },
      { workspaceId: ctx.workspaceId, signal: ctx.signal, dropIfWaiting: ctx.dropIfWaiting },
    );
    switch (outcome.kind) {
      case 'value':
        return JSON.parse(outcome.json) as unknown;
      case 'syntax_error':
        throw new NodeError('code_error', `the source does not compile: ${outcome.message}`, false);
      case 'error':
        throw new NodeError('code_error', outcome.message, false);
      case 'timeout':
        throw new NodeError('code_timeout', `the code ran longer than its limit of ${timeoutMs} ms (config.timeoutMs)`, false);
      case 'memory_exceeded':
        throw new NodeError(
          'code_memory_exceeded',
          `the code needed more than its limit of ${memoryMb} MB of memory (config.memoryMb)`,
          false,
        );
      case 'cancelled':
        throw ctx.signal.reason ?? new Error('the run was aborted');
      case 'dropped':
        throw new NodeNotStartedError(node.id);
      case 'unavailable':
        throw new NodeError('code_unavailable', `the JavaScript interpreter could not run: ${outcome.message}`, true);
    }
  };
}
