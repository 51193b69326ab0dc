import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
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

/**
 * A task node is never run by the worker: the runner asks the control plane for its task and
 * waits (a subworkflow node, for its child execution, alike). What runs here is the task's input: the node's `input` expression over the node's
 * input, evaluated like a transform, or the node's input itself when it has none.
 */
export function createTaskInputNode<Type extends 'task' | 'subworkflow'>(sandbox: TransformSandbox): NodeExecutor<Type> {
  return (node, ctx) => {
    const { config } = node as NodeOfType<'task' | 'subworkflow'>;
    const expression = config.input;
    return expression === undefined ? Promise.resolve(ctx.input) : sandbox.evaluate(expression, ctx.input, ctx.signal);
  };
}
