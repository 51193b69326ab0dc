import { z } from 'zod';
import type { DomainEvent } from '../../core/decider.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { IDENTIFIER_PATTERN } from '../../core/ids.js';
import { recordedVersion, upcast, type Upcasters } from '../../core/upcasting.js';

/** The largest concurrency bound a workspace may set. */
export const MAX_CONCURRENT_EXECUTIONS_LIMIT = 100_000;

/**
 * How many executions of the workspace may run at once (from admission to their end), or null
 * for no bound (the default).
 */
export const maxConcurrentExecutionsSchema = z.number().int('expected an integer').min(1).max(MAX_CONCURRENT_EXECUTIONS_LIMIT).nullable();

/** The largest sub-workflow tree a workspace may allow (executions under one top-level execution, itself included). */
export const MAX_EXECUTIONS_PER_TREE_LIMIT = 100_000;

/**
 * How many executions one sub-workflow tree may hold (a top-level execution and all its
 * descendants), or null for the deployment's default (FLOSTRA_MAX_EXECUTIONS_PER_TREE).
 */
export const maxExecutionsPerTreeSchema = z.number().int('expected an integer').min(1).max(MAX_EXECUTIONS_PER_TREE_LIMIT).nullable();

/** A workspace's settings, whole: every change records all of them. */
export const workspaceSettingsSchema = z.object({
  maxConcurrentExecutions: maxConcurrentExecutionsSchema,
  // Changes recorded before trees were bounded have none: the deployment's default.
  maxExecutionsPerTree: maxExecutionsPerTreeSchema.default(null),
});
export type WorkspaceSettings = z.infer<typeof workspaceSettingsSchema>;

export const DEFAULT_WORKSPACE_SETTINGS: WorkspaceSettings = { maxConcurrentExecutions: null, maxExecutionsPerTree: null };

/** Current version of workspace event payloads, written to each event's metadata. */
export const WORKSPACE_SCHEMA_VERSION = 1;

/** Facts of a workspace stream (`workspace-<workspaceId>`), checked when read back from the store. */
export const workspaceEventSchemas = {
  WorkspaceSettingsChanged: z.object({
    workspaceId: z.string().regex(IDENTIFIER_PATTERN),
    settings: workspaceSettingsSchema,
    changedBy: z.string(),
    changedAt: z.iso.datetime({ offset: true }),
  }),
} as const;

type Schemas = typeof workspaceEventSchemas;
export type WorkspaceEventType = keyof Schemas;
export type WorkspaceSettingsChanged = DomainEvent<'WorkspaceSettingsChanged', z.output<Schemas['WorkspaceSettingsChanged']>>;
export type WorkspaceEvent = WorkspaceSettingsChanged;

/** No workspace event has changed shape yet (see core/upcasting.ts). */
export const WORKSPACE_UPCASTERS: Upcasters = {};

/** Thrown when the log holds something this code cannot read: a bug or a corrupted store, never user input. */
export class UnreadableWorkspaceEventError extends Error {
  constructor(recorded: RecordedEvent, reason: string) {
    super(`event ${recorded.id} (${recorded.type} at ${recorded.streamId}@${recorded.revision}) is unreadable: ${reason}`);
  }
}

/** Validates an event read back from a workspace stream (zod at the edge), upcast to the current version first. */
export function parseWorkspaceEvent(recorded: RecordedEvent): WorkspaceEvent {
  if (!Object.hasOwn(workspaceEventSchemas, recorded.type)) throw new UnreadableWorkspaceEventError(recorded, 'unknown event type');
  const version = recordedVersion(recorded.metadata, WORKSPACE_SCHEMA_VERSION);
  if (typeof version !== 'number') throw new UnreadableWorkspaceEventError(recorded, `unknown schemaVersion ${String(version.version)}`);
  const data = upcast(WORKSPACE_UPCASTERS, recorded.type, version, WORKSPACE_SCHEMA_VERSION, recorded.data);
  const parsed = workspaceEventSchemas[recorded.type as WorkspaceEventType].safeParse(data);
  if (!parsed.success) throw new UnreadableWorkspaceEventError(recorded, z.prettifyError(parsed.error));
  return { type: recorded.type as WorkspaceEventType, data: parsed.data };
}
