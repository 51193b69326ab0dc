import type { NodeOfType, NodeType } from '../../workflows/domain/workflow-graph.schema.js';
import type { NodeContext } from '../dag/dag.types.js';

/** Runs one node of one type: resolves with its JSON output, rejects with a NodeError. */
export type NodeExecutor<Type extends NodeType> = (node: NodeOfType<Type>, ctx: NodeContext) => Promise<unknown>;
