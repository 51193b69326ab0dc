import { z } from 'zod';
import type { DomainEvent } from '../../core/decider.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { IDENTIFIER_PATTERN } from '../../core/ids.js';
import { recordedVersion, upcast, type Upcasters } from '../../core/upcasting.js';

/** Current version of schedule event payloads, written to each event's metadata. */
export const SCHEDULE_SCHEMA_VERSION = 1;

export const OVERLAP_POLICIES = ['skip', 'allow', 'buffer_one'] as const;
export const CATCHUP_POLICIES = ['none', 'last', 'all'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
export type CatchupPolicy = (typeof CATCHUP_POLICIES)[number];

const isoTime = z.iso.datetime({ offset: true });

/** What a schedule starts and when: the whole definition, recorded whole on every change. */
export const scheduleDefinitionSchema = z.object({
  workflow: z.string().regex(IDENTIFIER_PATTERN),
  cron: z.string(),
  timezone: z.string(),
  input: z.record(z.string(), z.unknown()),
  overlap: z.enum(OVERLAP_POLICIES),
  catchup: z.enum(CATCHUP_POLICIES),
});
export type ScheduleDefinition = z.infer<typeof scheduleDefinitionSchema>;

/**
 * Why a fire time started nothing: `overlap` (the previous execution still ran, policy `skip`),
 * `buffer_full` (it ran and a fire already waited, policy `buffer_one`), `missed` (it passed
 * while no scheduler ran, and the catch-up policy leaves it out; one record stands for `count`
 * such fire times, or more when null).
 */
export const SKIP_REASONS = ['overlap', 'buffer_full', 'missed'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

const change = { by: z.string(), at: isoTime };

/** Facts of a schedule stream (`schedule-<workspaceId>-<name>`), checked when read back from the store. */
export const scheduleEventSchemas = {
  ScheduleDefined: z.object({
    workspaceId: z.string().regex(IDENTIFIER_PATTERN),
    name: z.string().regex(IDENTIFIER_PATTERN),
    definition: scheduleDefinitionSchema,
    paused: z.boolean(),
    ...change,
  }),
  ScheduleUpdated: z.object({ definition: scheduleDefinitionSchema, ...change }),
  SchedulePaused: z.object(change),
  ScheduleResumed: z.object(change),
  ScheduleDeleted: z.object(change),
  /** The fire time is decided: `executionId` (derived from the fire) is to be started. */
  ScheduleFired: z.object({ fireTime: isoTime, executionId: z.string(), at: isoTime }),
  /** The fire time waits for the running execution to end (policy `buffer_one`). */
  ScheduleFireBuffered: z.object({ fireTime: isoTime, at: isoTime }),
  ScheduleFireSkipped: z.object({
    fireTime: isoTime,
    reason: z.enum(SKIP_REASONS),
    count: z.number().int().min(1).nullable(),
    at: isoTime,
  }),
  /** The start of a fired execution was refused (a secret the workflow needs is missing, …): it will not run. */
  ScheduleFireFailed: z.object({
    fireTime: isoTime,
    executionId: z.string(),
    error: z.object({ code: z.string(), message: z.string() }),
    at: isoTime,
  }),
} as const;

type Schemas = typeof scheduleEventSchemas;
export type ScheduleEventType = keyof Schemas;
export type ScheduleEventOf<T extends ScheduleEventType> = DomainEvent<T, z.output<Schemas[T]>>;
export type ScheduleEvent = { [T in ScheduleEventType]: ScheduleEventOf<T> }[ScheduleEventType];

export const SCHEDULE_EVENT_TYPES = Object.keys(scheduleEventSchemas) as ScheduleEventType[];

/** No schedule event has changed shape yet (see core/upcasting.ts). */
export const SCHEDULE_UPCASTERS: Upcasters = {};

/** Thrown when the log holds something this code cannot read: a bug or a corrupted store, never user input. */
export class UnreadableScheduleEventError extends Error {
  constructor(recorded: RecordedEvent, reason: string) {
    super(`event ${recorded.id} (${recorded.type} at ${recorded.streamId}@${recorded.revision}) is unreadable: ${reason}`);
  }
}

/** Validates an event read back from a schedule stream (zod at the edge), upcast to the current version first. */
export function parseScheduleEvent(recorded: RecordedEvent): ScheduleEvent {
  if (!Object.hasOwn(scheduleEventSchemas, recorded.type)) throw new UnreadableScheduleEventError(recorded, 'unknown event type');
  const version = recordedVersion(recorded.metadata, SCHEDULE_SCHEMA_VERSION);
  if (typeof version !== 'number') throw new UnreadableScheduleEventError(recorded, `unknown schemaVersion ${String(version.version)}`);
  const data = upcast(SCHEDULE_UPCASTERS, recorded.type, version, SCHEDULE_SCHEMA_VERSION, recorded.data);
  const parsed = (scheduleEventSchemas[recorded.type as ScheduleEventType] as z.ZodType).safeParse(data);
  if (!parsed.success) throw new UnreadableScheduleEventError(recorded, z.prettifyError(parsed.error));
  return { type: recorded.type, data: parsed.data } as ScheduleEvent;
}
