import { Injectable } from '@nestjs/common';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { ValidationFailedError } from '../../core/errors.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { parseBody } from '../../http/validation.js';
import type { StartedExecution } from '../domain/execution.state.js';
import { ExecutionRunner } from './execution-runner.js';
import { historyQuerySchema } from './request-schemas.js';

/**
 * Reads of one execution, folded from its stream. (Read models replace this fold later; the
 * response shape stays.) Authorization comes from the execution's workspace, never the URL.
 */
@Injectable()
export class ExecutionQueries {
  constructor(private readonly runner: ExecutionRunner) {}

  async get(principal: Principal, executionId: string) {
    const { state, history } = await this.runner.load(executionId);
    requireWorkspaceRole(principal, state.workspaceId, 'viewer', 'execution not found');
    return toView(state, history[history.length - 1]!.position);
  }

  async history(principal: Principal, executionId: string, rawQuery: unknown) {
    const query = parseBody(historyQuerySchema, rawQuery, 'query');
    const { state, history } = await this.runner.load(executionId);
    requireWorkspaceRole(principal, state.workspaceId, 'viewer', 'execution not found');
    let start = 0;
    if (query.after !== undefined) {
      const index = history.findIndex((e) => e.position === query.after);
      if (index < 0) throw new ValidationFailedError('after is not a position of this execution', [{ path: 'after', message: 'unknown position' }]);
      start = index + 1;
    }
    const page = history.slice(start, start + query.limit);
    return {
      events: page.map(toHistoryEvent),
      nextCursor: start + page.length < history.length ? page[page.length - 1]!.position : null,
    };
  }
}

/** One event as /history and SSE show it. */
export function toHistoryEvent(e: RecordedEvent) {
  return { eventId: e.id, type: e.type, position: e.position, revision: e.revision, recordedAt: e.recordedAt, data: e.data };
}

function toView(state: StartedExecution, position: string) {
  return {
    executionId: state.executionId,
    workspaceId: state.workspaceId,
    workflow: { workflowId: state.workflow.workflowId, name: state.workflow.name, revision: state.workflow.revision, digest: state.workflow.digest },
    workflowRevision: state.workflow.revision,
    status: state.status,
    cancelRequested: state.cancelRequest !== null,
    input: state.input,
    output: state.output ?? null,
    error: state.error ?? null,
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
      error: a.error ?? null,
    })),
    nodes: Object.values(state.nodes).map((n) => ({
      nodeId: n.nodeId,
      status: n.status,
      attemptId: n.attemptId,
      output: n.output ?? null,
      error: n.error ?? null,
      startedAt: n.startedAt,
      endedAt: n.endedAt,
    })),
    startedAt: state.startedAt,
    updatedAt: state.updatedAt,
    endedAt: state.endedAt,
    position,
  };
}
