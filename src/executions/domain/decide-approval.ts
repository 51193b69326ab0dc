import { sha256OfCanonical } from '../../core/canonical-json.js';
import { ApprovalMismatchError, DomainError, InvalidStateError } from '../../core/errors.js';
import type { CompleteAttempt, DecideApproval } from './execution.commands.js';
import type { ExecutionEvent } from './execution.events.js';
import { type StartedExecution, nextAttemptNumber } from './execution.state.js';

/** The digest an approval is bound to: the canonical JSON of the exact action, hashed. */
export const actionDigestOf = (action: unknown): string => sha256OfCanonical(action ?? null);

/**
 * The worker stopped at an approval node: record what it asks to approve and free the worker.
 * The digest is computed here from the action itself, never taken from the worker.
 */
export function suspendAtApproval(s: StartedExecution, command: CompleteAttempt): ExecutionEvent[] {
  const { data, metadata } = command;
  const at = metadata.now.toISOString();
  const approval = data.approval;
  if (!approval) throw new InvalidStateError('a suspended attempt must name the approval node and its action');
  const node = s.workflow.graph.nodes.find((n) => n.id === approval.nodeId);
  if (!node || node.type !== 'approval') throw new InvalidStateError(`node ${approval.nodeId} is not an approval node`);
  if (s.cancelRequest) {
    return [
      { type: 'AttemptCancelled', data: { attemptId: data.attemptId, at } },
      { type: 'ExecutionCancelled', data: { reason: s.cancelRequest.reason, at } },
    ];
  }
  return [
    {
      type: 'NodeAwaitingApproval',
      data: {
        attemptId: data.attemptId,
        nodeId: approval.nodeId,
        action: approval.action ?? null,
        actionDigest: actionDigestOf(approval.action),
        at,
      },
    },
    { type: 'AttemptSuspended', data: { attemptId: data.attemptId, nodeId: approval.nodeId, at } },
  ];
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
  return [
    { type: 'ApprovalGranted', data: decision },
    {
      type: 'AttemptScheduled',
      data: {
        attemptId: data.attemptId,
        attemptNumber: nextAttemptNumber(s),
        reason: 'resume',
        notBefore: at,
        queueDeadline: new Date(metadata.now.getTime() + s.workflow.graph.timeouts.queueMs).toISOString(),
        scheduledAt: at,
      },
    },
  ];
}
