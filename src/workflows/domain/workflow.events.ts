import { z } from 'zod';
import type { DomainEvent } from '../../core/decider.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { UUID_PATTERN } from '../../core/ids.js';
import { recordedVersion, upcast, type Upcasters } from '../../core/upcasting.js';
import { DIGEST_PATTERN } from './workflow-digest.js';
import { workflowGraphSchema } from './workflow-graph.schema.js';
import { workflowNameSchema, workspaceIdSchema } from './workflow-identity.js';

/** Current version of workflow event payloads, written to each event's metadata. */
export const WORKFLOW_SCHEMA_VERSION = 1;

/**
 * Payloads of the workflow stream, checked when read back from the store. The graph goes
 * through the publish schema again: on a normalized graph that changes nothing.
 */
export const workflowEventSchemas = {
  WorkflowRevisionPublished: z.object({
    workflowId: z.string().regex(UUID_PATTERN),
    workspaceId: workspaceIdSchema,
    name: workflowNameSchema,
    revision: z.number().int().min(1),
    digest: z.string().regex(DIGEST_PATTERN),
    graph: workflowGraphSchema,
    publishedBy: z.string(),
    publishedAt: z.iso.datetime({ offset: true }),
  }),
} as const;

type Schemas = typeof workflowEventSchemas;
export type WorkflowEventType = keyof Schemas;
export type WorkflowRevisionPublished = DomainEvent<'WorkflowRevisionPublished', z.output<Schemas['WorkflowRevisionPublished']>>;
export type WorkflowEvent = WorkflowRevisionPublished;

/** Thrown when the log holds something this code cannot read: a bug or a corrupted store, never user input. */
export class UnreadableWorkflowEventError extends Error {
  constructor(recorded: RecordedEvent, reason: string) {
    super(`event ${recorded.id} (${recorded.type} at ${recorded.streamId}@${recorded.revision}) is unreadable: ${reason}`);
  }
}

/** No workflow event has changed shape yet (see core/upcasting.ts). */
export const WORKFLOW_UPCASTERS: Upcasters = {};

/** Validates an event read back from a workflow stream (zod at the edge), upcast to the current version first. */
export function parseWorkflowEvent(recorded: RecordedEvent): WorkflowEvent {
  // hasOwn, not a plain lookup: a type named "toString" must not find Object.prototype's.
  if (!Object.hasOwn(workflowEventSchemas, recorded.type)) throw new UnreadableWorkflowEventError(recorded, 'unknown event type');
  const version = recordedVersion(recorded.metadata, WORKFLOW_SCHEMA_VERSION);
  if (typeof version !== 'number') throw new UnreadableWorkflowEventError(recorded, `unknown schemaVersion ${String(version.version)}`);
  const data = upcast(WORKFLOW_UPCASTERS, recorded.type, version, WORKFLOW_SCHEMA_VERSION, recorded.data);
  const parsed = workflowEventSchemas[recorded.type as WorkflowEventType].safeParse(data);
  if (!parsed.success) throw new UnreadableWorkflowEventError(recorded, z.prettifyError(parsed.error));
  return { type: recorded.type as WorkflowEventType, data: parsed.data };
}
