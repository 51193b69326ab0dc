/**
 * Who commanded a fact: every event a command appends carries its actor in `metadata.actor`
 * (docs/architecture.md, "Envelope metadata"). A person is the subject of the bearer token that
 * sent the command, as it is; the other two kinds are spelled here so that every stream writes
 * them alike.
 */

/** What a worker did (a claim, a heartbeat, a result ingested from the bus, a completion). */
export function workerActor(workerId: string): string {
  return `worker:${workerId}`;
}

/** What the control plane did on its own: `system:watchdog` for a time-out, `system:<role>` for another step. */
export function systemActor(role: string): string {
  return `system:${role}`;
}

/** Shown for a fact recorded before actors were, whose payload names nobody either. */
export const UNKNOWN_ACTOR = 'unknown';

/** What a schedule started on its own: `schedule:<name>` (the schedule's workspace is the execution's). */
export function scheduleActor(name: string): string {
  return `schedule:${name}`;
}
