import { sha256OfCanonical } from '../../core/canonical-json.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';

/** A graph digest: 64 lowercase hex characters of sha256. */
export const DIGEST_PATTERN = /^[0-9a-f]{64}$/;

/**
 * Digest of a normalized graph. Nodes are sorted by id and edges by (from, to) before the
 * canonical JSON (keys sorted at every depth), so the same graph written in another order has
 * the same digest: republishing it is then recognized as "no change".
 */
export function workflowGraphDigest(graph: WorkflowGraph): string {
  return sha256OfCanonical({
    ...graph,
    nodes: [...graph.nodes].sort((a, b) => compare(a.id, b.id)),
    edges: [...graph.edges].sort((a, b) => compare(a.from, b.from) || compare(a.to, b.to)),
  });
}

// Code-unit order, not localeCompare: the digest must not depend on the machine's locale.
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
