import type { CommandMetadata, Decider } from '../../core/decider.js';
import { DomainError } from '../../core/errors.js';
import type { ScheduleRegisterEvent } from './schedule-register.events.js';

/** The workspace holds as many schedules as it may (FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE). HTTP 409. */
export class ScheduleLimitReachedError extends DomainError {
  constructor(limit: number) {
    super('limit_reached', `the workspace already has ${limit} schedules, the most it may have; delete one first`, {
      limit,
      resource: 'schedules',
    });
  }
}

/** Takes a place for a schedule about to be defined, while fewer than `limit` are taken. */
export type RegisterSchedule = {
  type: 'RegisterSchedule';
  data: { name: string; limit: number };
  metadata: CommandMetadata;
};

/** Gives the name's place back. */
export type UnregisterSchedule = { type: 'UnregisterSchedule'; data: { name: string }; metadata: CommandMetadata };

export type ScheduleRegisterCommand = RegisterSchedule | UnregisterSchedule;

/** The names that hold a place among the workspace's schedules. */
export interface ScheduleRegisterState {
  names: ReadonlySet<string>;
}

const initialState = (): ScheduleRegisterState => ({ names: new Set() });

function decide(command: ScheduleRegisterCommand, state: ScheduleRegisterState): ScheduleRegisterEvent[] {
  const { name } = command.data;
  const change = { name, by: command.metadata.actor, at: command.metadata.now.toISOString() };
  switch (command.type) {
    case 'RegisterSchedule':
      if (state.names.has(name)) return [];
      if (state.names.size >= command.data.limit) throw new ScheduleLimitReachedError(command.data.limit);
      return [{ type: 'ScheduleRegistered', data: change }];
    case 'UnregisterSchedule':
      return state.names.has(name) ? [{ type: 'ScheduleUnregistered', data: change }] : [];
    default: {
      const unknown: never = command;
      throw new Error(`unknown command ${(unknown as { type: string }).type}`);
    }
  }
}

function evolve(state: ScheduleRegisterState, event: ScheduleRegisterEvent): ScheduleRegisterState {
  const names = new Set(state.names);
  if (event.type === 'ScheduleRegistered') names.add(event.data.name);
  else names.delete(event.data.name);
  return { names };
}

/**
 * Promise 13 (docs/architecture.md): a workspace's schedules are bounded. The register is one
 * stream per workspace, so two creates that race for the last place are separated by its
 * expected revision: one takes it, the other decides again and is refused.
 */
export const scheduleRegisterDecider: Decider<ScheduleRegisterCommand, ScheduleRegisterEvent, ScheduleRegisterState> = {
  decide,
  evolve,
  initialState,
};
