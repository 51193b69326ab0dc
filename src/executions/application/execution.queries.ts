import { Inject, Injectable } from '@nestjs/common';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { NotFoundError, ValidationFailedError } from '../../core/errors.js';
import type { TimelineEvent } from '../../core/timeline.port.js';
import { parseBody } from '../../http/validation.js';
import { ExecutionsReadModel, type ExecutionSummary } from '../../projector/executions-read-model.js';
import { ReadConsistency, readRequirement } from '../../projector/read-consistency.js';
import { PostgresTimelineReader } from '../../projector/timeline-reader.js';
import { executionStreamId } from '../domain/execution-event.parser.js';
import type { StartedExecution } from '../domain/execution.state.js';
import {
  executionHistoryQuerySchema as historySchema,
  executionListQuerySchema as listQuerySchema,
  executionQuerySchema as getQuerySchema,
} from './request-schemas.js';

/**
 * Reads of executions, from the read models (`executions`, `timeline`). Each waits first until
 * the read model reflects what the request needs (read-your-writes; see read-consistency.ts).
 * Authorization comes from the execution's workspace, never the URL (promise 10).
 */
@Injectable()
export class ExecutionQueries {
  constructor(
    @Inject(ExecutionsReadModel) private readonly executions: ExecutionsReadModel,
    @Inject(PostgresTimelineReader) private readonly timeline: PostgresTimelineReader,
    @Inject(ReadConsistency) private readonly consistency: ReadConsistency,
  ) {}

  async get(principal: Principal, executionId: string, rawQuery: unknown = {}, minPositionHeader?: string) {
    const query = parseBody(getQuerySchema, rawQuery, 'query');
    const document = await this.consistency.readAfterStream(
      'executions',
      readRequirement(query, minPositionHeader),
      executionStreamId(executionId),
      () => this.executions.get(executionId),
      (found) => found?.revision ?? null,
    );
    if (document === null) throw new NotFoundError('execution not found');
    requireWorkspaceRole(principal, document.state.workspaceId, 'viewer', 'execution not found');
    return toView(document.state, document.position);
  }

  async history(principal: Principal, executionId: string, rawQuery: unknown, minPositionHeader?: string) {
    const query = parseBody(historySchema, rawQuery, 'query');
    const execution = await this.consistency.readAfterStream(
      'timeline',
      readRequirement(query, minPositionHeader),
      executionStreamId(executionId),
      () => this.timeline.executionInfo(executionId),
      (found) => found?.lastRevision ?? null,
    );
    if (execution === null) throw new NotFoundError('execution not found');
    requireWorkspaceRole(principal, execution.workspaceId, 'viewer', 'execution not found');
    // Any event's position will do (an SSE id of a workspace stream, too); anything else is a mistake.
    if (query.after !== undefined && !(await this.timeline.hasEventAt(query.after))) {
      throw new ValidationFailedError('after is not the position of any event', [{ path: 'after', message: 'unknown position' }]);
    }
    const events = await this.timeline.readExecution(executionId, query.after ?? null, query.limit + 1);
    const page = events.slice(0, query.limit);
    return { events: page.map(toHistoryEvent), nextCursor: events.length > query.limit ? page[page.length - 1]!.position : null };
  }

  /** A workspace's executions, newest first, filtered by status and workflow, in pages. */
  async list(principal: Principal, workspaceId: string, rawQuery: unknown, minPositionHeader?: string) {
    requireWorkspaceRole(principal, workspaceId, 'viewer');
    const query = parseBody(listQuerySchema, rawQuery, 'query');
    await this.consistency.waitFor('executions', readRequirement(query, minPositionHeader));
    const { executions, checkpoint } = await this.executions.list({
      workspaceId,
      statuses: query.status ?? null,
      workflowName: query.workflow ?? null,
      before: query.cursor === undefined ? null : decodeCursor(query.cursor),
      limit: query.limit + 1,
    });
    const page = executions.slice(0, query.limit);
    return {
      executions: page.map(toSummaryView),
      nextCursor: executions.length > query.limit ? encodeCursor(page[page.length - 1]!.createdPosition) : null,
      /** The read model's checkpoint this page reflects. */
      position: checkpoint,
    };
  }
}

/** One event as /history and SSE show it. */
export function toHistoryEvent(e: TimelineEvent) {
  return { eventId: e.eventId, type: e.type, position: e.position, revision: e.revision, recordedAt: e.recordedAt, data: e.data };
}

/** Opaque to clients: the position of the last execution's start, so later pages never shift. */
function encodeCursor(createdPosition: string): string {
  return Buffer.from(createdPosition, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const decoded = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!/^[\x21-\x7e]{1,200}$/.test(decoded)) throw new ValidationFailedError('invalid cursor', [{ path: 'query.cursor', message: 'not a cursor of this list' }]);
  return decoded;
}

function toSummaryView(s: ExecutionSummary) {
  return {
    executionId: s.executionId,
    workspaceId: s.workspaceId,
    workflow: { name: s.workflowName, revision: s.workflowRevision },
    workflowRevision: s.workflowRevision,
    status: s.status,
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
  const nodes = Object.values(state.nodes).sort((a, b) => (order.get(a.nodeId) ?? Infinity) - (order.get(b.nodeId) ?? Infinity) || (a.nodeId < b.nodeId ? -1 : 1));
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
    pendingApproval: state.pendingApproval === null ? null : { nodeId: state.pendingApproval.nodeId, action: state.pendingApproval.action, actionDigest: state.pendingApproval.actionDigest },
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
    nodes: nodes.map((n) => ({
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
