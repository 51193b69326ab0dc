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

/**
 * Takes a place for a schedule about to be defined, while fewer than `limit` are taken. `existing`
 * names the schedules the workspace already holds, for a register that has no event yet (it
 * seeds it); null once the register exists.
 */
export type RegisterSchedule = {
  type: 'RegisterSchedule';
  data: { name: string; limit: number; existing: readonly string[] | null };
  metadata: CommandMetadata;
};

/** Gives the name's place back. */
export type UnregisterSchedule = { type: 'UnregisterSchedule'; data: { name: string }; metadata: CommandMetadata };

export type ScheduleRegisterCommand = RegisterSchedule | UnregisterSchedule;

/** The names that hold a place among the workspace's schedules. */
export interface ScheduleRegisterState {
  /** False until the register's first event: the schedules held before it are not known yet. */
  seeded: boolean;
  names: ReadonlySet<string>;
}

const initialState = (): ScheduleRegisterState => ({ seeded: false, names: new Set() });

function register(command: RegisterSchedule, state: ScheduleRegisterState): ScheduleRegisterEvent[] {
  const { name, limit, existing } = command.data;
  const by = command.metadata.actor;
  const at = command.metadata.now.toISOString();
  const seed: ScheduleRegisterEvent[] =
    !state.seeded && existing !== null ? [{ type: 'ScheduleRegisterSeeded', data: { names: [...new Set(existing)].sort(), by, at } }] : [];
  const current = seed.reduce(evolve, state);
  if (current.names.has(name)) return seed;
  if (current.names.size >= limit) {
    // The seed is not recorded with a refusal: nothing is written beyond the bound.
    throw new ScheduleLimitReachedError(limit);
  }
  return [...seed, { type: 'ScheduleRegistered', data: { name, by, at } }];
}

function decide(command: ScheduleRegisterCommand, state: ScheduleRegisterState): ScheduleRegisterEvent[] {
  const { name } = command.data;
  const change = { name, by: command.metadata.actor, at: command.metadata.now.toISOString() };
  switch (command.type) {
    case 'RegisterSchedule':
      return register(command, state);
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
  switch (event.type) {
    case 'ScheduleRegisterSeeded':
      for (const name of event.data.names) names.add(name);
      break;
    case 'ScheduleRegistered':
      names.add(event.data.name);
      break;
    case 'ScheduleUnregistered':
      names.delete(event.data.name);
      break;
  }
  return { seeded: true, names };
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
