import { z } from 'zod';
import type { DomainEvent } from '../../core/decider.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { recordedVersion, upcast, type Upcasters } from '../../core/upcasting.js';

/** Current version of tree event payloads, written to each event's metadata. */
export const TREE_SCHEMA_VERSION = 1;

const isoTime = z.iso.datetime({ offset: true });

/**
 * Facts of a sub-workflow tree (`tree-<rootExecutionId>`): each child admitted into it, and its
 * close when the root is cancelled. The members admitted never outnumber the bound each was
 * admitted under, and nobody is admitted after the close.
 */
export const treeEventSchemas = {
  TreeMemberAdmitted: z.object({
    childExecutionId: z.string(),
    parentExecutionId: z.string(),
    /** The bound the admission was decided under (executions in the tree, the root included). */
    bound: z.number().int().min(1),
    /** Executions in the tree with this one, the root included. */
    executions: z.number().int().min(2),
    at: isoTime,
  }),
  TreeClosed: z.object({ reason: z.string(), at: isoTime }),
} as const;

type Schemas = typeof treeEventSchemas;
export type TreeEventType = keyof Schemas;
export type TreeEventOf<T extends TreeEventType> = DomainEvent<T, z.output<Schemas[T]>>;
export type TreeEvent = { [T in TreeEventType]: TreeEventOf<T> }[TreeEventType];

/** No tree event has changed shape yet (see core/upcasting.ts). */
export const TREE_UPCASTERS: Upcasters = {};

/** Thrown when the log holds something this code cannot read: a bug or a corrupted store, never user input. */
export class UnreadableTreeEventError extends Error {
  constructor(recorded: RecordedEvent, reason: string) {
    super(`event ${recorded.id} (${recorded.type} at ${recorded.streamId}@${recorded.revision}) is unreadable: ${reason}`);
  }
}

/** Validates an event read back from a tree stream (zod at the edge), upcast to the current version first. */
export function parseTreeEvent(recorded: RecordedEvent): TreeEvent {
  if (!Object.hasOwn(treeEventSchemas, recorded.type)) throw new UnreadableTreeEventError(recorded, 'unknown event type');
  const version = recordedVersion(recorded.metadata, TREE_SCHEMA_VERSION);
  if (typeof version !== 'number') throw new UnreadableTreeEventError(recorded, `unknown schemaVersion ${String(version.version)}`);
  const data = upcast(TREE_UPCASTERS, recorded.type, version, TREE_SCHEMA_VERSION, recorded.data);
  const parsed = (treeEventSchemas[recorded.type as TreeEventType] as z.ZodType).safeParse(data);
  if (!parsed.success) throw new UnreadableTreeEventError(recorded, z.prettifyError(parsed.error));
  return { type: recorded.type, data: parsed.data } as TreeEvent;
}

/** `tree-<rootExecutionId>`: the sub-workflow tree under a top-level execution. */
export const treeStreamId = (rootExecutionId: string): string => `tree-${rootExecutionId}`;
