import { z } from 'zod';
import type { DomainEvent } from '../../core/decider.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { UUID_PATTERN } from '../../core/ids.js';
import { recordedVersion, upcast, type Upcasters } from '../../core/upcasting.js';
import { secretNameSchema } from './secret-name.js';

/** Current version of secrets event payloads, written to each event's metadata. */
export const SECRETS_SCHEMA_VERSION = 1;

/**
 * Payloads of a workspace's secrets stream: which names exist, their version, and which row of
 * `secret_values` holds each one's ciphertext. Never a value, in any form.
 */
export const secretsEventSchemas = {
  /** A new version of a secret is current; its value is the row `valueId` (written just before). */
  SecretPut: z.object({
    name: secretNameSchema,
    version: z.number().int().min(1),
    valueId: z.string().regex(UUID_PATTERN),
    updatedAt: z.iso.datetime({ offset: true }),
  }),
  /** The secret no longer exists; the row of its last version is no longer referenced. */
  SecretDeleted: z.object({
    name: secretNameSchema,
    version: z.number().int().min(1),
    valueId: z.string().regex(UUID_PATTERN),
    deletedAt: z.iso.datetime({ offset: true }),
  }),
} as const;

type Schemas = typeof secretsEventSchemas;
export type SecretsEventType = keyof Schemas;
export type SecretPut = DomainEvent<'SecretPut', z.output<Schemas['SecretPut']>>;
export type SecretDeleted = DomainEvent<'SecretDeleted', z.output<Schemas['SecretDeleted']>>;
export type SecretsEvent = SecretPut | SecretDeleted;

/** The stream of a workspace's secrets. Workspace ids contain no ":" or "/", so the id is unambiguous. */
export function secretsStreamId(workspaceId: string): string {
  return `secrets-${workspaceId}`;
}

/** Thrown when the log holds something this code cannot read: a bug or a corrupted store, never user input. */
export class UnreadableSecretsEventError extends Error {
  constructor(recorded: RecordedEvent, reason: string) {
    super(`event ${recorded.id} (${recorded.type} at ${recorded.streamId}@${recorded.revision}) is unreadable: ${reason}`);
  }
}

/** No secrets event has changed shape yet (see core/upcasting.ts). */
export const SECRETS_UPCASTERS: Upcasters = {};

/** Validates an event read back from a secrets stream (zod at the edge), upcast to the current version first. */
export function parseSecretsEvent(recorded: RecordedEvent): SecretsEvent {
  if (!Object.hasOwn(secretsEventSchemas, recorded.type)) throw new UnreadableSecretsEventError(recorded, 'unknown event type');
  const version = recordedVersion(recorded.metadata, SECRETS_SCHEMA_VERSION);
  if (typeof version !== 'number') throw new UnreadableSecretsEventError(recorded, `unknown schemaVersion ${String(version.version)}`);
  const data = upcast(SECRETS_UPCASTERS, recorded.type, version, SECRETS_SCHEMA_VERSION, recorded.data);
  const type = recorded.type as SecretsEventType;
  const parsed = secretsEventSchemas[type].safeParse(data);
  if (!parsed.success) throw new UnreadableSecretsEventError(recorded, z.prettifyError(parsed.error));
  return { type, data: parsed.data } as SecretsEvent;
}
