import { MAX_RESULT_MESSAGE_BYTES } from '../../core/bus.port.js';
import { indexGraph, topologicalOrder } from '../../workflows/domain/graph.js';
import { decideTrigger, type FinalOutcome } from '../../workflows/domain/trigger-rules.js';
import type { JoinTrigger } from '../../workflows/domain/workflow-graph.schema.js';
import { type StartedExecution, unscheduledFirstAttemptId } from './execution.state.js';
import { jsonBytes } from './json-bytes.js';

/**
 * What follows once a wait of a suspended execution ended, decided by the control plane itself
 * (docs/architecture.md, "Waiting steps"). A resume attempt costs a dispatch, a claim and a replay
 * of the graph in a worker; when all it would do is ask for the next tasks, or end the execution
 * with the leaves' outputs, the decider does that in the same append instead:
 *
 * - `wait`: nothing new can run; other waits are still open.
 * - `tasks`: every node that became runnable is a task node whose input is its node input (no
 *   `input` expression to evaluate): their tasks are scheduled now, no attempt runs.
 * - `complete`: every node succeeded; the execution's output is the outputs of its leaves, as the
 *   worker's run would have reported it.
 * - `resume`: anything else (a built-in or approval node to run, an `input` expression, which
 *   only the worker's sandbox evaluates, a node failed in this try, a value too large to record
 *   here): a resume attempt runs the graph on, as before.
 */
export type NextStep =
  | { readonly kind: 'wait' }
  | { readonly kind: 'tasks'; readonly tasks: readonly { readonly nodeId: string; readonly input: unknown }[] }
  | { readonly kind: 'complete'; readonly output: Readonly<Record<string, unknown>> }
  | { readonly kind: 'resume'; readonly because: string };

/**
 * Largest task input or execution output the decider records itself: half a result message,
 * well inside what the worker would accept. A larger one goes to a resume attempt, so the worker
 * applies its own limits (`output_too_large`) exactly as before.
 */
export const MAX_DECIDED_VALUE_BYTES = MAX_RESULT_MESSAGE_BYTES / 2;

/**
 * The attempts of the current try: the last one scheduled for a start, retry or redrive, and the
 * resumes after it. A node's result recorded in one of them holds for the whole try.
 */
export function currentTryAttemptIds(s: StartedExecution): Set<string> {
  const ids = new Set<string>();
  // No attempt yet: the root tasks scheduled with the start record their results under attempt 1's id.
  const first = unscheduledFirstAttemptId(s);
  if (first !== undefined) ids.add(first);
  for (let i = s.attempts.length - 1; i >= 0; i--) {
    ids.add(s.attempts[i].attemptId);
    if (s.attempts[i].reason !== 'resume') break;
  }
  return ids;
}

/** Where a node ended in this try, as the worker's run would count it (a success holds across tries). */
function outcomeInTry(s: StartedExecution, tryAttempts: ReadonlySet<string>, nodeId: string): FinalOutcome | undefined {
  const node = s.nodes[nodeId];
  if (node?.status === 'succeeded') return 'succeeded';
  if ((node?.status === 'failed' || node?.status === 'skipped') && tryAttempts.has(node.attemptId)) return node.status;
  return undefined;
}

/** A live task or a pending approval: its result will come from outside. */
function waitsOutside(s: StartedExecution, nodeId: string): boolean {
  return s.nodes[nodeId]?.status === 'waiting' || s.pendingApproval?.nodeId === nodeId;
}

const resume = (because: string): NextStep => ({ kind: 'resume', because });

/** Decides from the state with the wait's end already folded in (see `NextStep`). */
export function nextStep(s: StartedExecution): NextStep {
  const { graph } = s.workflow;
  const index = indexGraph(graph);
  const tryAttempts = currentTryAttemptIds(s);
  const outcomes = new Map<string, FinalOutcome>();
  for (const id of index.nodeIds) {
    const outcome = outcomeInTry(s, tryAttempts, id);
    if (outcome !== undefined) outcomes.set(id, outcome);
  }
  const unsuccessful = [...outcomes].find(([, outcome]) => outcome !== 'succeeded');
  if (unsuccessful !== undefined) return resume(`node ${unsuccessful[0]} ${unsuccessful[1]} in this try`);
  const predecessors = (id: string) => index.predecessors.get(id) ?? [];
  const runnable = topologicalOrder(index).filter(
    (id) => !outcomes.has(id) && !waitsOutside(s, id) && predecessors(id).every((p) => outcomes.has(p)),
  );
  if (runnable.length === 0) {
    if (index.nodeIds.some((id) => waitsOutside(s, id))) return { kind: 'wait' };
    const output = Object.fromEntries(index.leaves.map((id) => [id, s.nodes[id]?.output ?? null]));
    return jsonBytes(output) > MAX_DECIDED_VALUE_BYTES ? resume('the output is large') : { kind: 'complete', output };
  }
  const tasks: { nodeId: string; input: unknown }[] = [];
  for (const id of runnable) {
    const node = graph.nodes.find((n) => n.id === id)!;
    const trigger = (node['trigger'] as JoinTrigger | undefined) ?? 'all_success';
    const decision = decideTrigger(
      trigger,
      predecessors(id).map((p) => ({ id: p, outcome: outcomes.get(p)! })),
    );
    if (!decision.run) return resume(`node ${id} is skipped`);
    if (node.type !== 'task') return resume(`node ${id} is a ${node.type} node`);
    if ((node['config'] as { input?: string } | undefined)?.input !== undefined) return resume(`task node ${id} has an input expression`);
    // The node's input as the worker's run builds it: the execution's input and the outputs of its succeeded predecessors.
    const nodes = Object.fromEntries(predecessors(id).map((p) => [p, s.nodes[p]?.output ?? null]));
    const input = { input: s.input, nodes };
    if (jsonBytes(input) > MAX_DECIDED_VALUE_BYTES) return resume(`the input of task node ${id} is large`);
    tasks.push({ nodeId: id, input });
  }
  return { kind: 'tasks', tasks };
}
