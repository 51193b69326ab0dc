import type { NodeExecutor } from './node-executor.js';
import type { TransformSandbox } from './transform-sandbox.js';

/**
 * Evaluates the node's JSONata expression over its input (`{ input, nodes }`) in the sandbox's
 * evaluator processes (transform-sandbox.ts). The output is the expression's value as plain
 * JSON: nothing is null, and functions are dropped. Every failure is not retryable, since the
 * same expression over the same input fails the same way: `transform_failed` (syntax,
 * evaluation, a depth or sequence limit), `transform_timeout` or `transform_memory_exceeded`.
 */
export function createTransformNode(sandbox: TransformSandbox): NodeExecutor<'transform'> {
  return (node, ctx) => sandbox.evaluate(node.config.expression, ctx.input, ctx.signal);
}
