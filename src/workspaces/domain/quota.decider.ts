import type { CommandMetadata, Decider } from '../../core/decider.js';
import type { QuotaEvent } from './quota.events.js';

/** Takes a slot for the attempt that admits an execution's run, if the bound leaves room. */
export type GrantSlot = {
  type: 'GrantSlot';
  data: { executionId: string; attemptId: string; bound: number | null };
  metadata: CommandMetadata;
};

/** Gives back the slot of an attempt whose run is over (or never ran). */
export type ReleaseSlot = {
  type: 'ReleaseSlot';
  data: { executionId: string; attemptId: string };
  metadata: CommandMetadata;
};

export type QuotaCommand = GrantSlot | ReleaseSlot;

/** The slots held, by the attempt that took each, with its execution. */
export interface QuotaState {
  holders: ReadonlyMap<string, string>;
}

const initialState = (): QuotaState => ({ holders: new Map() });

/** Whether `attemptId` holds a slot. */
export const holdsQuotaSlot = (state: QuotaState, attemptId: string): boolean => state.holders.has(attemptId);

/** Whether one more slot fits under `bound` (null: no bound). */
export const hasFreeSlot = (state: QuotaState, bound: number | null): boolean => bound === null || state.holders.size < bound;

function decide(command: QuotaCommand, state: QuotaState): QuotaEvent[] {
  const { data, metadata } = command;
  const at = metadata.now.toISOString();
  switch (command.type) {
    case 'GrantSlot': {
      // A grant asked again (a retried pass, a second admission process) is the same grant.
      if (holdsQuotaSlot(state, data.attemptId)) return [];
      // Full: no fact to record; the execution keeps waiting for a release.
      if (!hasFreeSlot(state, command.data.bound)) return [];
      const { executionId, attemptId, bound } = command.data;
      return [{ type: 'SlotGranted', data: { executionId, attemptId, bound, held: state.holders.size + 1, at } }];
    }
    case 'ReleaseSlot':
      // Released already, or never granted: nothing to give back.
      if (!holdsQuotaSlot(state, data.attemptId)) return [];
      return [{ type: 'SlotReleased', data: { executionId: data.executionId, attemptId: data.attemptId, at } }];
  }
}

function evolve(state: QuotaState, event: QuotaEvent): QuotaState {
  const holders = new Map(state.holders);
  if (event.type === 'SlotGranted') holders.set(event.data.attemptId, event.data.executionId);
  else holders.delete(event.data.attemptId);
  return { holders };
}

/**
 * The semaphore of a workspace's concurrency bound. A grant is decided on the folded stream
 * (fewer holders than the bound) and appended with the stream's expected revision, so two
 * processes that both saw a free slot cannot both take it: the second append fails, and the
 * second decision, on the stream as the first left it, finds it full.
 */
export const quotaDecider: Decider<QuotaCommand, QuotaEvent, QuotaState> = { decide, evolve, initialState };
