import { Inject, Injectable } from '@nestjs/common';
import { NotFoundError, ValidationFailedError } from '../../core/errors.js';
import { EVENT_STORE, type EventStore, type Position } from '../../core/event-store.port.js';
import { parseWorkflowEvent } from '../domain/workflow.events.js';
import type { WorkflowGraph } from '../domain/workflow-graph.schema.js';
import { IDENTIFIER_PATTERN, workflowStreamId } from '../domain/workflow-identity.js';

/** One published revision of a workflow: what an execution snapshots when it starts. */
export interface WorkflowRevision {
  workflowId: string;
  workspaceId: string;
  name: string;
  revision: number;
  digest: string;
  graph: WorkflowGraph;
  publishedBy: string;
  publishedAt: string;
  /** Global position of the event that published this revision. */
  position: Position;
}

/** Reads revisions straight from the workflow stream: always current, no projection lag. */
@Injectable()
export class WorkflowQueries {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  /**
   * The given revision, or the latest when `revision` is absent. Throws NotFoundError when the
   * workflow or the revision does not exist (a malformed workspace id or name cannot exist).
   */
  async getRevision(workspaceId: string, name: string, revision?: number): Promise<WorkflowRevision> {
    if (revision !== undefined && !(Number.isSafeInteger(revision) && revision >= 1)) {
      throw new ValidationFailedError('revision must be a positive integer', [{ path: 'revision', message: 'must be a positive integer' }]);
    }
    const notFound = () =>
      new NotFoundError(revision === undefined ? `workflow ${name} not found` : `revision ${revision} of workflow ${name} not found`);
    if (!IDENTIFIER_PATTERN.test(workspaceId) || !IDENTIFIER_PATTERN.test(name)) throw notFound();

    const recorded = await this.store.readStream(workflowStreamId(workspaceId, name));
    let found: WorkflowRevision | null = null;
    for (const event of recorded) {
      const { type, data } = parseWorkflowEvent(event);
      if (type !== 'WorkflowRevisionPublished') continue;
      // Promise 10: only this workspace's workflow, whatever else a stream might hold.
      if (data.workspaceId !== workspaceId || data.name !== name) continue;
      if (revision === undefined || data.revision === revision) found = { ...data, position: event.position };
    }
    if (!found) throw notFound();
    return found;
  }
}
