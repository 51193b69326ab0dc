import { ValidationFailedError } from '../../core/errors.js';
import type { TimelineEvent } from '../../core/timeline.port.js';
import type { ExecutionSummary } from '../../../projections/executions.read-model.js';
import type { StartedExecution } from '../domain/execution.state.js';

/** How executions are shown over HTTP (and, for events, over SSE). */

/** One event as /history and SSE show it. */
export function toHistoryEvent(e: TimelineEvent) {
  return { eventId: e.eventId, type: e.type, position: e.position, revision: e.revision, recordedAt: e.recordedAt, data: e.data };
}

/** Opaque to clients: the position of the last execution's start, so later pages never shift. */
export function encodeCursor(createdPosition: string): string {
  return Buffer.from(createdPosition, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  const decoded = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!/^[\x21-\x7e]{1,200}$/.test(decoded))
    throw new ValidationFailedError('invalid cursor', [{ path: 'query.cursor', message: 'not a cursor of this list' }]);
  return decoded;
}

export function toSummaryView(s: ExecutionSummary) {
  return {
    executionId: s.executionId,
    workspaceId: s.workspaceId,
    workflow: { name: s.workflowName, revision: s.workflowRevision },
    workflowRevision: s.workflowRevision,
    status: s.status,
    waitingFor: s.waitingFor,
    scheduledBy: s.scheduledBy,
    cancelRequested: s.cancelRequested,
    attemptCount: s.attemptCount,
    startedAt: s.startedAt,
    updatedAt: s.updatedAt,
    endedAt: s.endedAt,
    position: s.position,
  };
}

/** The detail of one execution; `position` is the last event it reflects. */
export function toView(state: StartedExecution, position: string) {
  // Graph order: stable, and independent of how the document was stored.
  const order = new Map(state.workflow.graph.nodes.map((n, index) => [n.id, index]));
  const nodes = Object.values(state.nodes).sort(
    (a, b) => (order.get(a.nodeId) ?? Infinity) - (order.get(b.nodeId) ?? Infinity) || (a.nodeId < b.nodeId ? -1 : 1),
  );
  return {
    executionId: state.executionId,
    workspaceId: state.workspaceId,
    workflow: {
      workflowId: state.workflow.workflowId,
      name: state.workflow.name,
      revision: state.workflow.revision,
      digest: state.workflow.digest,
    },
    workflowRevision: state.workflow.revision,
    status: state.status,
    // Documents folded before quotas existed have no `awaitingSlot`: they never waited.
    waitingFor: state.awaitingSlot?.waitingFor ?? null,
    // Documents folded before schedules have no `scheduledBy`: they were started over HTTP.
    scheduledBy: state.scheduledBy ?? null,
    cancelRequested: state.cancelRequest !== null,
    input: state.input,
    output: state.output ?? null,
    error: state.error ?? null,
    pendingApproval:
      state.pendingApproval === null
        ? null
        : { nodeId: state.pendingApproval.nodeId, action: state.pendingApproval.action, actionDigest: state.pendingApproval.actionDigest },
    attempts: state.attempts.map((a) => ({
      attemptId: a.attemptId,
      attemptNumber: a.attemptNumber,
      reason: a.reason,
      status: a.status,
      workerId: a.workerId,
      leaseExpiresAt: a.leaseExpiresAt,
      queueDeadline: a.queueDeadline,
      notBefore: a.notBefore,
      scheduledAt: a.scheduledAt,
      claimedAt: a.claimedAt,
      endedAt: a.endedAt,
      error: (a.status === 'queued' || a.status === 'running' ? null : a.error) ?? null,
    })),
    nodes: nodes.map((n) => ({
      nodeId: n.nodeId,
      status: n.status,
      attemptId: n.attemptId,
      output: n.output ?? null,
      error: n.error ?? null,
      startedAt: n.startedAt,
      endedAt: n.endedAt,
    })),
    // Documents folded before task nodes existed have no `tasks`.
    tasks: Object.values(state.tasks ?? {}).map((t) => ({
      taskId: t.taskId,
      nodeId: t.nodeId,
      queue: t.queue,
      taskAttempt: t.taskAttempt,
      status: t.status,
      input: t.input ?? null,
      workerId: t.workerId,
      notBefore: t.notBefore,
      scheduledAt: t.scheduledAt,
      claimedAt: t.claimedAt,
      leaseExpiresAt: t.leaseExpiresAt,
      timeoutAt: t.timeoutAt,
      endedAt: t.endedAt,
      progress: t.recentProgress?.at(-1)?.progress ?? null,
      recentProgress: (t.recentProgress ?? []).map((entry) => ({ at: entry.at, progress: entry.progress ?? null })),
      output: t.output ?? null,
      error: t.error ?? null,
    })),
    // Documents folded before sub-workflows have neither `parent` nor `children`.
    parentExecutionId: state.parent?.executionId ?? null,
    parent: state.parent
      ? {
          executionId: state.parent.executionId,
          nodeId: state.parent.nodeId,
          depth: state.parent.depth,
          rootExecutionId: state.parent.rootExecutionId ?? null,
        }
      : null,
    children: Object.values(state.children ?? {}).map((c) => ({
      executionId: c.childExecutionId,
      nodeId: c.nodeId,
      workflow: c.workflow,
      status: c.status,
      startedAt: c.startedAt,
      endedAt: c.endedAt,
    })),
    // Documents folded before timers and signals existed have neither.
    timers: Object.values(state.timers ?? {}).map((t) => ({
      timerId: t.timerId,
      nodeId: t.nodeId,
      purpose: t.purpose,
      status: t.status,
      dueAt: t.dueAt,
      firedAt: t.firedAt,
      lateByMs: t.lateByMs,
    })),
    signals: (state.signals ?? []).map((signal) => ({
      signalId: signal.signalId,
      name: signal.name,
      payload: signal.payload ?? null,
      sentBy: signal.sentBy,
      receivedAt: signal.receivedAt,
      deliveredTo: signal.deliveredTo,
    })),
    startedAt: state.startedAt,
    updatedAt: state.updatedAt,
    endedAt: state.endedAt,
    position,
  };
}
