import { sha256OfCanonical } from '../../core/canonical-json.js';
import { ApprovalMismatchError, DomainError, InvalidStateError } from '../../core/errors.js';
import type { DecideApproval } from './execution.commands.js';
import type { ExecutionEvent } from './execution.events.js';
import type { StartedExecution } from './execution.state.js';
import { afterSuccessWhileSuspended } from './tasks.js';

/** The digest an approval is bound to: the canonical JSON of the exact action, hashed. */
export const actionDigestOf = (action: unknown): string => sha256OfCanonical(action ?? null);

/**
 * The worker stopped at an approval node: record what it asks to approve (part of the attempt's
 * suspension, `suspendAttempt`). The digest is computed here from the action itself, never taken
 * from the worker.
 */
export function awaitApproval(attemptId: string, approval: { nodeId: string; action: unknown }, at: string): ExecutionEvent {
  return {
    type: 'NodeAwaitingApproval',
    data: { attemptId, nodeId: approval.nodeId, action: approval.action ?? null, actionDigest: actionDigestOf(approval.action), at },
  };
}

/** A person who may operate the workspace but is not among the approvers the approval node names. HTTP 403. */
export class NotAnApproverError extends DomainError {
  constructor(nodeId: string) {
    super('forbidden', `only the approvers named by approval node ${nodeId} may decide it`);
  }
}

/**
 * Who may decide an approval node, as the execution's own graph snapshot names them
 * (`config.approvers`): null when it names nobody in particular, so any operator may.
 */
export function approversOf(s: StartedExecution, nodeId: string): readonly string[] | null {
  const node = s.workflow.graph.nodes.find((n) => n.id === nodeId);
  const config: unknown = node?.['config'];
  if (node?.type !== 'approval' || typeof config !== 'object' || config === null) return null;
  const approvers: unknown = (config as { approvers?: unknown }).approvers;
  if (!Array.isArray(approvers)) return null;
  return approvers.filter((approver): approver is string => typeof approver === 'string');
}

/**
 * A person approves or rejects the pending action; the digest must be the one still pending.
 * When the node names approvers, only they may decide (an empty list names nobody): anyone
 * else is refused whatever the state, and the graph never changes, so the refusal is final.
 */
export function decideApproval(s: StartedExecution, command: DecideApproval): ExecutionEvent[] {
  const { data, metadata } = command;
  const at = metadata.now.toISOString();
  const approvers = approversOf(s, data.nodeId);
  if (approvers !== null && !approvers.includes(metadata.actor)) throw new NotAnApproverError(data.nodeId).asFinal();
  const previous = s.approvalDecisions[data.nodeId];
  const pending = s.pendingApproval;
  if (!pending && previous?.decision === data.decision && previous.actionDigest === data.actionDigest) return [];
  if (s.status !== 'awaiting_approval' || !pending || pending.nodeId !== data.nodeId) {
    throw new InvalidStateError(`no approval is pending for node ${data.nodeId}`, { status: s.status });
  }
  if (pending.actionDigest !== data.actionDigest) {
    throw new ApprovalMismatchError('the action changed since it was shown for approval', { actionDigest: pending.actionDigest });
  }
  const decision = { nodeId: data.nodeId, actionDigest: data.actionDigest, decidedBy: metadata.actor, comment: data.comment, at };
  if (data.decision === 'reject') {
    return [
      { type: 'ApprovalRejected', data: decision },
      {
        type: 'ExecutionFailed',
        data: { error: { code: 'approval_rejected', message: data.comment ?? `rejected by ${metadata.actor}`, retryable: false }, at },
      },
    ];
  }
  // What follows is decided in the same append, as for a task's end: the tasks of the task nodes
  // it makes runnable, the execution's end, nothing (other waits are open), or a resume attempt.
  const granted: ExecutionEvent = { type: 'ApprovalGranted', data: decision };
  return [granted, ...afterSuccessWhileSuspended(s, [granted], data.attemptId, metadata.now)];
}
