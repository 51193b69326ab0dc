import { z } from 'zod';
import type { DomainEvent } from '../../core/decider.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { IDENTIFIER_PATTERN } from '../../core/ids.js';
import { recordedVersion, upcast, type Upcasters } from '../../core/upcasting.js';

/** Current version of schedule register payloads, written to each event's metadata. */
export const SCHEDULE_REGISTER_SCHEMA_VERSION = 1;

const change = { by: z.string(), at: z.iso.datetime({ offset: true }) };

/** Facts of a workspace's schedule register (`schedules-<workspaceId>`), checked when read back from the store. */
export const scheduleRegisterEventSchemas = {
  /** The name holds one of the workspace's places for schedules, from before its definition is appended. */
  ScheduleRegistered: z.object({ name: z.string().regex(IDENTIFIER_PATTERN), ...change }),
  /**
   * The register's first event: the names of the schedules the workspace held before it had a
   * register, each holding a place from now on.
   */
  ScheduleRegisterSeeded: z.object({ names: z.array(z.string().regex(IDENTIFIER_PATTERN)), ...change }),
  /** The name gave its place back (its schedule was deleted, or its definition never appended). */
  ScheduleUnregistered: z.object({ name: z.string().regex(IDENTIFIER_PATTERN), ...change }),
} as const;

type Schemas = typeof scheduleRegisterEventSchemas;
export type ScheduleRegisterEventType = keyof Schemas;
export type ScheduleRegisterEvent = { [T in ScheduleRegisterEventType]: DomainEvent<T, z.output<Schemas[T]>> }[ScheduleRegisterEventType];

/** No register event has changed shape yet (see core/upcasting.ts). */
export const SCHEDULE_REGISTER_UPCASTERS: Upcasters = {};

/** Thrown when the log holds something this code cannot read: a bug or a corrupted store, never user input. */
export class UnreadableScheduleRegisterEventError extends Error {
  constructor(recorded: RecordedEvent, reason: string) {
    super(`event ${recorded.id} (${recorded.type} at ${recorded.streamId}@${recorded.revision}) is unreadable: ${reason}`);
  }
}

/** Validates an event read back from a schedule register (zod at the edge), upcast to the current version first. */
export function parseScheduleRegisterEvent(recorded: RecordedEvent): ScheduleRegisterEvent {
  if (!Object.hasOwn(scheduleRegisterEventSchemas, recorded.type)) {
    throw new UnreadableScheduleRegisterEventError(recorded, 'unknown event type');
  }
  const version = recordedVersion(recorded.metadata, SCHEDULE_REGISTER_SCHEMA_VERSION);
  if (typeof version !== 'number') {
    throw new UnreadableScheduleRegisterEventError(recorded, `unknown schemaVersion ${String(version.version)}`);
  }
  const data = upcast(SCHEDULE_REGISTER_UPCASTERS, recorded.type, version, SCHEDULE_REGISTER_SCHEMA_VERSION, recorded.data);
  const parsed = (scheduleRegisterEventSchemas[recorded.type as ScheduleRegisterEventType] as z.ZodType).safeParse(data);
  if (!parsed.success) throw new UnreadableScheduleRegisterEventError(recorded, z.prettifyError(parsed.error));
  return { type: recorded.type, data: parsed.data } as ScheduleRegisterEvent;
}
