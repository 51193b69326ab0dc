import type { CommandMetadata, Decider } from '../../core/decider.js';
import type { QuotaEvent } from './quota.events.js';

/** One slot: the attempt whose scheduling admits an execution's run. */
export interface SlotRequest {
  executionId: string;
  attemptId: string;
}

/**
 * Takes slots for these runs, in this order (the queue's), as long as the bound leaves room:
 * the first that finds none ends the grant, so nobody behind it gets one.
 */
export type GrantSlots = {
  type: 'GrantSlots';
  data: { slots: SlotRequest[]; bound: number | null };
  metadata: CommandMetadata;
};

/** Gives back the slots of runs that are over (or never ran). */
export type ReleaseSlots = {
  type: 'ReleaseSlots';
  data: { slots: SlotRequest[] };
  metadata: CommandMetadata;
};

export type QuotaCommand = GrantSlots | ReleaseSlots;

/** The slots held, by the attempt that took each, with its execution. */
export interface QuotaState {
  holders: ReadonlyMap<string, string>;
}

const initialState = (): QuotaState => ({ holders: new Map() });

/** Whether `attemptId` holds a slot. */
export const holdsQuotaSlot = (state: QuotaState, attemptId: string): boolean => state.holders.has(attemptId);

/** How many more slots fit under `bound` (null: no bound). */
export const freeSlots = (state: QuotaState, bound: number | null): number =>
  bound === null ? Number.POSITIVE_INFINITY : Math.max(0, bound - state.holders.size);

function decide(command: QuotaCommand, state: QuotaState): QuotaEvent[] {
  const at = command.metadata.now.toISOString();
  const events: QuotaEvent[] = [];
  if (command.type === 'ReleaseSlots') {
    const released = new Set<string>();
    for (const { executionId, attemptId } of command.data.slots) {
      // Released already, or never granted: nothing to give back.
      if (!holdsQuotaSlot(state, attemptId) || released.has(attemptId)) continue;
      released.add(attemptId);
      events.push({ type: 'SlotReleased', data: { executionId, attemptId, at } });
    }
    return events;
  }
  const { slots, bound } = command.data;
  const held = new Set(state.holders.keys());
  for (const { executionId, attemptId } of slots) {
    // A grant asked again (a retried pass, a second admission process) is the same grant.
    if (held.has(attemptId)) continue;
    // Full: the run keeps waiting for a release, and so does everyone behind it.
    if (bound !== null && held.size >= bound) break;
    held.add(attemptId);
    events.push({ type: 'SlotGranted', data: { executionId, attemptId, bound, held: held.size, at } });
  }
  return events;
}

function evolve(state: QuotaState, event: QuotaEvent): QuotaState {
  const holders = new Map(state.holders);
  if (event.type === 'SlotGranted') holders.set(event.data.attemptId, event.data.executionId);
  else holders.delete(event.data.attemptId);
  return { holders };
}

/**
 * The semaphore of a workspace's concurrency bound. Grants are decided on the folded stream
 * (fewer holders than the bound) and appended with the stream's expected revision, so two
 * processes that both saw a free slot cannot both take it: the second append fails, and the
 * second decision, on the stream as the first left it, finds it full.
 */
export const quotaDecider: Decider<QuotaCommand, QuotaEvent, QuotaState> = { decide, evolve, initialState };
