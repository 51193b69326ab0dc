import { sha256OfCanonical } from '../../core/canonical-json.js';
import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
import type { NodeInput, PendingApproval } from './dag.types.js';

/**
 * Digest of what an approval decides on: this execution, this node, its configured action and
 * the predecessor outputs flowing into it. A decision carries it back; when any part changed
 * (another upstream output, another action), the decision no longer matches.
 */
export function approvalActionDigest(parts: {
  readonly executionId: string;
  readonly nodeId: string;
  readonly action: unknown;
  readonly inputs: Readonly<Record<string, unknown>>;
}): string {
  return sha256OfCanonical({
    executionId: parts.executionId,
    nodeId: parts.nodeId,
    action: parts.action ?? null,
    inputs: parts.inputs,
  });
}

export function pendingApproval(executionId: string, node: NodeOfType<'approval'>, input: NodeInput): PendingApproval {
  const action = node.config.action ?? null;
  return {
    nodeId: node.id,
    action,
    inputs: input.nodes,
    actionDigest: approvalActionDigest({ executionId, nodeId: node.id, action, inputs: input.nodes }),
  };
}
