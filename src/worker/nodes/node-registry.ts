import { CodeSandbox } from '../../sandbox/code-sandbox.js';
import type { NodeType, WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import type { Evaluate, ExecuteNode } from '../dag/dag.types.js';
import { NodeError } from '../dag/node-error.js';
import type { EgressGuard } from '../egress/egress-guard.js';
import { executeDelay, executeFail, executeNoop, executeWaitSignal } from './basic-nodes.js';
import { createCodeNode } from './code-node.js';
import { createHttpNode } from './http-node.js';
import { createSwitchNode } from './switch-node.js';
import type { NodeExecutor } from './node-executor.js';
import { createTaskInputNode, createTransformNode } from './transform-node.js';
import { TransformSandbox } from './transform-sandbox.js';

export interface NodeRegistryOptions {
  /** Every network call of every node goes through it. */
  readonly egress: EgressGuard;
  /** Where transforms are evaluated; a sandbox with the default limits when absent (started on first use). */
  readonly transform?: TransformSandbox;
  /** Where `code` nodes run; a sandbox with the default pool when absent (started on first use). */
  readonly code?: CodeSandbox;
}

/** Executable node types: not `approval` (the runner suspends there) nor `map` (the runner runs its items). */
export type ExecutableNodeType = Exclude<NodeType, 'approval' | 'map'>;

export interface NodeRegistry {
  /** Dispatches on `node.type`; pass it to `runDag` as `executeNode`. */
  readonly execute: ExecuteNode;
  /** Pass it to `runDag` as `isPure`: node types that touch nothing outside the run. */
  readonly isPure: (node: WorkflowNode) => boolean;
  /** Pass it to `runDag` as `evaluate`: a map's items expression, in the transform sandbox. */
  readonly evaluate: Evaluate;
  readonly executors: { readonly [Type in ExecutableNodeType]: NodeExecutor<Type> };
}

/** No network, no timer, no effect outside the run: nothing to announce before running them. */
const PURE_NODE_TYPES: ReadonlySet<NodeType> = new Set(['noop', 'transform', 'code', 'fail', 'switch']);

export function createNodeRegistry(options: NodeRegistryOptions): NodeRegistry {
  const sandbox = options.transform ?? new TransformSandbox();
  const executors: NodeRegistry['executors'] = {
    noop: executeNoop,
    delay: executeDelay,
    transform: createTransformNode(sandbox),
    code: createCodeNode(options.code ?? new CodeSandbox()),
    http: createHttpNode(options.egress),
    fail: executeFail,
    task: createTaskInputNode<'task'>(sandbox),
    subworkflow: createTaskInputNode<'subworkflow'>(sandbox),
    switch: createSwitchNode(sandbox),
    wait_signal: executeWaitSignal,
  };
  const execute: ExecuteNode = async (node, ctx) => {
    switch (node.type) {
      case 'noop':
        return executors.noop(node, ctx);
      case 'delay':
        return executors.delay(node, ctx);
      case 'transform':
        return executors.transform(node, ctx);
      case 'code':
        return executors.code(node, ctx);
      case 'http':
        return executors.http(node, ctx);
      case 'fail':
        return executors.fail(node, ctx);
      case 'task':
        return executors.task(node, ctx);
      case 'subworkflow':
        return executors.subworkflow(node, ctx);
      case 'switch':
        return executors.switch(node, ctx);
      case 'map':
        throw new NodeError('map_not_executable', `map node ${node.id} is run item by item by the DAG runner`, false);
      case 'wait_signal':
        return executors.wait_signal(node, ctx);
      case 'approval':
        throw new NodeError('approval_not_executable', `approval node ${node.id} waits for a decision; it is never executed`, false);
      default: {
        const unknown: never = node;
        throw new NodeError('unknown_node_type', `unknown node type ${(unknown as { type: string }).type}`, false);
      }
    }
  };
  return {
    execute,
    executors,
    isPure: (node) => PURE_NODE_TYPES.has(node.type),
    evaluate: (expression, input, signal) => sandbox.evaluate(expression, input, signal),
  };
}
