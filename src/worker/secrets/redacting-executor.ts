import type { ExecuteNode, SecretSource } from '../dag/dag.types.js';
import { NodeError, UNEXPECTED_NODE_ERROR } from '../dag/node-error.js';
import type { SecretRedactor } from './secret-redactor.js';

/**
 * Runs nodes with the attempt's secrets at hand, and redacts what comes out of each before the
 * run sees it: the output that successors read and that is reported, and the error message that
 * becomes the node's, the attempt's and the retry's reason. A node's successors then see the same
 * redacted output in this attempt as in any later one (which reuses the recorded output).
 */
export function redactingExecutor(execute: ExecuteNode, secrets: SecretSource, redactor: SecretRedactor): ExecuteNode {
  return async (node, ctx) => {
    try {
      return redactor.value(await execute(node, { ...ctx, secrets }));
    } catch (error) {
      // A cancelled run reports nothing of the node; its error is dropped as it is.
      if (ctx.signal.aborted || !redactor.active) throw error;
      if (error instanceof NodeError) throw new NodeError(error.code, redactor.text(error.message), error.retryable);
      const message = error instanceof Error ? error.message : String(error);
      throw new NodeError(UNEXPECTED_NODE_ERROR, redactor.text(message || 'the node failed'));
    }
  };
}
