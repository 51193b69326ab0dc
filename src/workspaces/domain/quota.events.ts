import { z } from 'zod';
import type { DomainEvent } from '../../core/decider.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { recordedVersion, upcast, type Upcasters } from '../../core/upcasting.js';
import { maxConcurrentExecutionsSchema } from './workspace-settings.events.js';

/** Current version of quota event payloads, written to each event's metadata. */
export const QUOTA_SCHEMA_VERSION = 1;

const slot = {
  executionId: z.string(),
  /** The attempt whose scheduling the slot admits: the first of a run (a start or a redrive). */
  attemptId: z.string(),
  at: z.iso.datetime({ offset: true }),
};

/**
 * Facts of a workspace's quota semaphore (`quota-<workspaceId>`). A slot is held from its grant
 * to its release; the grants not yet released never outnumber the bound they were granted under.
 */
export const quotaEventSchemas = {
  SlotGranted: z.object({
    ...slot,
    /** The bound the grant was decided under (null: none), and how many slots were held with this one. */
    bound: maxConcurrentExecutionsSchema,
    held: z.number().int().min(1),
  }),
  SlotReleased: z.object(slot),
} as const;

type Schemas = typeof quotaEventSchemas;
export type QuotaEventType = keyof Schemas;
export type QuotaEventOf<T extends QuotaEventType> = DomainEvent<T, z.output<Schemas[T]>>;
export type QuotaEvent = { [T in QuotaEventType]: QuotaEventOf<T> }[QuotaEventType];

/** No quota event has changed shape yet (see core/upcasting.ts). */
export const QUOTA_UPCASTERS: Upcasters = {};

/** Thrown when the log holds something this code cannot read: a bug or a corrupted store, never user input. */
export class UnreadableQuotaEventError extends Error {
  constructor(recorded: RecordedEvent, reason: string) {
    super(`event ${recorded.id} (${recorded.type} at ${recorded.streamId}@${recorded.revision}) is unreadable: ${reason}`);
  }
}

/** Validates an event read back from a quota stream (zod at the edge), upcast to the current version first. */
export function parseQuotaEvent(recorded: RecordedEvent): QuotaEvent {
  if (!Object.hasOwn(quotaEventSchemas, recorded.type)) throw new UnreadableQuotaEventError(recorded, 'unknown event type');
  const version = recordedVersion(recorded.metadata, QUOTA_SCHEMA_VERSION);
  if (typeof version !== 'number') throw new UnreadableQuotaEventError(recorded, `unknown schemaVersion ${String(version.version)}`);
  const data = upcast(QUOTA_UPCASTERS, recorded.type, version, QUOTA_SCHEMA_VERSION, recorded.data);
  const parsed = (quotaEventSchemas[recorded.type as QuotaEventType] as z.ZodType).safeParse(data);
  if (!parsed.success) throw new UnreadableQuotaEventError(recorded, z.prettifyError(parsed.error));
  return { type: recorded.type, data: parsed.data } as QuotaEvent;
}
