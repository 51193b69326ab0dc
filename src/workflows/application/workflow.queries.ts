import { Inject, Injectable } from '@nestjs/common';
import { NotFoundError, ValidationFailedError } from '../../core/errors.js';
import { EVENT_STORE, type EventStore, type Position } from '../../core/event-store.port.js';
import { StreamStateCache } from '../../core/stream-state-cache.js';
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

/** Workflows whose latest revision a process remembers (the ones it starts executions of). */
const REMEMBERED_WORKFLOWS = 1_000;

/**
 * Reads revisions straight from the workflow stream: always current, no projection lag. The
 * latest revision of a recently read workflow is remembered with the stream revision it was
 * read up to, so the next read asks only for what came after: usually nothing, one indexed
 * lookup instead of the whole stream read and checked again on every start.
 */
@Injectable()
export class WorkflowQueries {
  /** Per workflow stream: the latest revision, as of the stream revision it was read up to. */
  private readonly latest = new StreamStateCache<WorkflowRevision | null>(REMEMBERED_WORKFLOWS);

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

    const streamId = workflowStreamId(workspaceId, name);
    const known = revision === undefined ? this.latest.get(streamId) : undefined;
    // The read sees every committed event after the remembered one: together they are current.
    const recorded = await this.store.readStream(streamId, { fromRevision: known === undefined ? 0 : known.revision + 1 });
    let found: WorkflowRevision | null = known?.state ?? null;
    for (const event of recorded) {
      const { type, data } = parseWorkflowEvent(event);
      if (type !== 'WorkflowRevisionPublished') continue;
      // Promise 10 (docs/architecture.md): only this workspace's workflow, whatever else a stream might hold.
      if (data.workspaceId !== workspaceId || data.name !== name) continue;
      if (revision === undefined || data.revision === revision) found = { ...data, position: event.position };
    }
    const last = recorded.at(-1);
    if (revision === undefined && last !== undefined) this.latest.set(streamId, { revision: last.revision, state: found });
    if (!found) throw notFound();
    return found;
  }
}
