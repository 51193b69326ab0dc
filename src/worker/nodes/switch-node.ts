import type { NodeExecutor } from './node-executor.js';
import type { TransformSandbox } from './transform-sandbox.js';

/** A switch's output: which case was taken (its index, or "default") and the successors it routes to. */
export interface SwitchOutput {
  readonly case: number | 'default';
  readonly to: readonly string[];
}

/**
 * Evaluates the cases' predicates in order over the node's input, in the transform sandbox, each
 * cast with JSONata's `$boolean` (empty strings, arrays and objects, 0, null and nothing are
 * false); the first that holds is taken, else `default` (no target when there is none). Later
 * predicates are not evaluated. The runner skips the targets not taken (dag-run-state.ts).
 */
export function createSwitchNode(sandbox: TransformSandbox): NodeExecutor<'switch'> {
  return async (node, ctx) => {
    for (const [index, branch] of node.config.cases.entries()) {
      // Parenthesized on lines of their own: a block (`a; b`) or a trailing comment stays whole.
      const holds = await sandbox.evaluate(`$boolean((\n${branch.when}\n))`, ctx.input, ctx.signal);
      if (holds === true) return { case: index, to: branch.to } satisfies SwitchOutput;
    }
    return { case: 'default', to: node.config.default ?? [] } satisfies SwitchOutput;
  };
}
