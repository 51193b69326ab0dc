import { z } from 'zod';
import type { Position, RecordedEvent } from './event-store.port.js';

/**
 * Retention's fact in the log (docs/operations.md, Retention): executions whose streams were
 * deleted, and the time before which the audit trail is pruned. Every read model applies it in
 * log order, so a rebuild from the log gives the same rows as the live version: the deleted
 * streams' events are gone (or, on KurrentDB before a scavenge, still in `$all` and removed
 * again by this fact), and the fact prunes the same rows in both.
 */
export const RETENTION_STREAM = 'retention';
export const EXECUTIONS_EXPIRED = 'ExecutionsExpired';

export const executionsExpiredSchema = z.object({
  /** Executions whose streams were deleted. */
  executionIds: z.array(z.string().min(1).max(200)).max(10_000),
  /** Audit rows recorded before this time are pruned (ISO-8601). */
  before: z.iso.datetime({ offset: true }),
  /** The newest position among the deleted events, or of an earlier fact: resumes before it answer 410. */
  prunedThrough: z.string().min(1).max(200).nullable(),
});

export type ExecutionsExpiredData = z.infer<typeof executionsExpiredSchema>;

/** The fact as read models receive it: its payload and where it sits in the log. */
export interface Expiry extends ExecutionsExpiredData {
  readonly position: Position;
}

/** The fact in a recorded event, validated (zod at the edge); null for any other event. */
export function expiryOf(recorded: RecordedEvent): Expiry | null {
  if (recorded.streamId !== RETENTION_STREAM || recorded.type !== EXECUTIONS_EXPIRED) return null;
  return { ...executionsExpiredSchema.parse(recorded.data), position: recorded.position };
}
