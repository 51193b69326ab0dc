import { InvalidStateError, NotFoundError } from '../../core/errors.js';
import type { RecordChildResult, RecordNodeResult } from './execution.commands.js';
import type { ExecutionError, ExecutionEvent } from './execution.events.js';
import { type StartedExecution, isFinal } from './execution.state.js';
import { MAX_SUBWORKFLOW_DEPTH, childExecutionIdOf, childrenOf, lineageOf, liveChildOf } from './subworkflow-children.js';
import { goesOn, resumeIfSuspended, settledInTry, tryAttemptId } from './tasks.js';

/**
 * Sub-workflows: a `subworkflow` node runs another workflow of the workspace as a child execution
 * and takes its output. Like a task, the wait is a fact on the parent's stream, not a process: the
 * worker asks for the child (`node_waiting`), the parent records `ChildExecutionStarted` with the
 * child's derived id, the subworkflow manager starts the child's stream, and when the child ends it
 * records the end here, which gives the node its result and resumes the parent
 * (docs/architecture.md, "Sub-workflows").
 */

const iso = (d: Date) => d.toISOString();

interface SubworkflowNodeConfig {
  workflow: string;
  revision: number | null;
}

function subworkflowNode(s: StartedExecution, nodeId: string): SubworkflowNodeConfig {
  const node = s.workflow.graph.nodes.find((n) => n.id === nodeId);
  if (node?.type !== 'subworkflow') throw new InvalidStateError(`node ${nodeId} is not a subworkflow node`);
  const config = (node['config'] ?? {}) as { workflow?: string; revision?: number };
  return { workflow: config.workflow ?? '', revision: config.revision ?? null };
}

/**
 * A subworkflow node became runnable in a claimed attempt: name its child, once. Asking again (a
 * redelivered result, a resumed or retried attempt reaching the node while its child runs, or
 * after the child ended in this try) is no new fact. Beyond the depth limit, or when the child's
 * workflow already runs among the node's ancestors (a cycle), the node fails instead.
 */
export function startChild(
  s: StartedExecution,
  command: RecordNodeResult,
  requireLiveClaim: (s: StartedExecution) => void,
): ExecutionEvent[] {
  const { data, metadata } = command;
  if (liveChildOf(s, data.nodeId) !== undefined || settledInTry(s, data.nodeId)) return [];
  requireLiveClaim(s);
  const config = subworkflowNode(s, data.nodeId);
  if (s.cancelRequest) return [];
  const at = iso(metadata.now);
  const depth = (s.parent?.depth ?? 0) + 1;
  if (depth > MAX_SUBWORKFLOW_DEPTH) {
    const error: ExecutionError = {
      code: 'subworkflow_depth_exceeded',
      message: `a child of node ${data.nodeId} would sit at depth ${depth}; at most ${MAX_SUBWORKFLOW_DEPTH} levels of sub-workflows run`,
      retryable: false,
    };
    return [{ type: 'NodeFailed', data: { attemptId: data.attemptId, nodeId: data.nodeId, error, at } }];
  }
  // A workflow already running above this node would start itself again, level after level.
  const lineage = lineageOf(s);
  if (lineage.includes(config.workflow)) {
    const error: ExecutionError = {
      code: 'subworkflow_cycle',
      message: `node ${data.nodeId} would run ${config.workflow}, which already runs above it (${[...lineage, config.workflow].join(' → ')})`,
      retryable: false,
    };
    return [{ type: 'NodeFailed', data: { attemptId: data.attemptId, nodeId: data.nodeId, error, at } }];
  }
  const seq = childrenOf(s).filter((c) => c.nodeId === data.nodeId).length + 1;
  return [
    {
      type: 'ChildExecutionStarted',
      data: {
        nodeId: data.nodeId,
        attemptId: data.attemptId,
        childExecutionId: childExecutionIdOf(s.executionId, data.nodeId, seq),
        workflow: config.workflow,
        revision: config.revision,
        input: data.wait !== undefined && 'input' in data.wait ? data.wait.input : null,
        depth,
        at,
      },
    },
  ];
}

/**
 * A child ended: recorded on the parent in any case (its list of children shows it); when the
 * parent still waits for it, the node succeeds with the child's output or fails `child_failed`,
 * and a suspended parent resumes as after a task's end. The same end recorded again is a replay.
 */
export function recordChildResult(s: StartedExecution, command: RecordChildResult): ExecutionEvent[] {
  const { data, metadata } = command;
  const child = s.children?.[data.childExecutionId];
  if (child === undefined) throw new NotFoundError('child execution not found');
  if (child.status !== 'running') return [];
  const now = metadata.now;
  const at = iso(now);
  const ended: ExecutionEvent = {
    type: 'ChildExecutionEnded',
    data: { nodeId: child.nodeId, childExecutionId: child.childExecutionId, status: data.outcome, at },
  };
  if (isFinal(s) || s.cancelRequest) return [ended];
  const attemptId = tryAttemptId(s, child);
  if (data.outcome === 'succeeded') {
    return [
      ended,
      { type: 'NodeSucceeded', data: { attemptId, nodeId: child.nodeId, output: data.output ?? null, at } },
      ...(goesOn(s, child.nodeId) ? resumeIfSuspended(s, data.nextAttemptId, now) : []),
    ];
  }
  const cause = data.error ? `: ${data.error.code}: ${data.error.message}` : '';
  const error: ExecutionError = data.nodeError ?? {
    code: 'child_failed',
    message: `child execution ${child.childExecutionId} ended ${data.outcome}${cause}`.slice(0, 4096),
    retryable: true,
  };
  return [
    ended,
    { type: 'NodeFailed', data: { attemptId, nodeId: child.nodeId, error, at } },
    ...resumeIfSuspended(s, data.nextAttemptId, now),
  ];
}
