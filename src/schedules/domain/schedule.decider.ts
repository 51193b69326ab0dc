import { canonicalJson } from '../../core/canonical-json.js';
import type { CommandMetadata, Decider } from '../../core/decider.js';
import { NotFoundError } from '../../core/errors.js';
import { scheduledExecutionId } from '../../executions/domain/scheduled-execution-id.js';
import { dueFireTimes } from './cron.js';
import type { ScheduleDefinition, ScheduleEvent, SkipReason } from './schedule.events.js';

/**
 * The most recent due fire time is on time while at most this late; every other due fire time was
 * missed (it passed while no scheduler decided it), and the catch-up policy decides it.
 */
export const MISFIRE_GRACE_MS = 60_000;
/** Catch-up `all` starts at most this many missed fire times (the most recent); older ones are recorded as missed. */
export const CATCHUP_LIMIT = 100;
/** Decided fire times a schedule's state remembers for its detail. */
export const RECENT_FIRES = 20;

/** Creates the schedule, or replaces its definition and pause state (a PUT). */
export type PutSchedule = {
  type: 'PutSchedule';
  data: { workspaceId: string; name: string; definition: ScheduleDefinition; paused: boolean };
  metadata: CommandMetadata;
};

export type DeleteSchedule = { type: 'DeleteSchedule'; data: Record<string, never>; metadata: CommandMetadata };

/**
 * Decide every fire time due at `metadata.now`. `previous` is what the scheduler found of the
 * schedule's last started execution (the state's `lastExecution`) when it looked: whether it
 * still runs. A decision on another execution than the state's (someone fired meanwhile) decides
 * nothing: the scheduler looks again.
 */
export type TriggerSchedule = {
  type: 'TriggerSchedule';
  data: { previous: { executionId: string; running: boolean } | null };
  metadata: CommandMetadata;
};

/** The start of a fired execution was refused for good. */
export type FailFire = {
  type: 'FailFire';
  data: { fireTime: string; executionId: string; error: { code: string; message: string } };
  metadata: CommandMetadata;
};

export type ScheduleCommand = PutSchedule | DeleteSchedule | TriggerSchedule | FailFire;

/** One decided fire time, as the detail shows it. */
export interface FireRecord {
  fireTime: string;
  outcome: 'started' | 'buffered' | 'skipped' | 'failed';
  executionId: string | null;
  reason: SkipReason | null;
  count: number | null;
  error: { code: string; message: string } | null;
  at: string;
}

export interface StartedFire {
  fireTime: string;
  executionId: string;
  /** When it was decided: the fires of one decision share it. */
  at: string;
}

export interface ScheduleState {
  status: 'none' | 'active' | 'deleted';
  workspaceId: string;
  name: string;
  definition: ScheduleDefinition | null;
  paused: boolean;
  createdAt: string | null;
  createdBy: string | null;
  updatedAt: string | null;
  updatedBy: string | null;
  /** The latest fire time decided (fired, buffered or skipped); later fire times only are due. Kept across a delete. */
  lastFireTime: string | null;
  /** Fire times count from here: the definition, the last resume, the last change of cron or time zone. */
  countFrom: string | null;
  /** A fire time waiting for the running execution to end (policy `buffer_one`). */
  buffered: string | null;
  /** The execution of the latest fire that started one: the one `skip` and `buffer_one` wait for. */
  lastExecution: StartedFire | null;
  /**
   * The fires of the latest decision that fired: the only ones whose start may still be owed (a
   * scheduler that appended them may have stopped before starting them). Every earlier decision's
   * fires were started before the next decision was taken.
   */
  owedStarts: StartedFire[];
  /** The latest decided fire times, newest first. */
  recentFires: FireRecord[];
}

export const initialScheduleState = (): ScheduleState => ({
  status: 'none',
  workspaceId: '',
  name: '',
  definition: null,
  paused: false,
  createdAt: null,
  createdBy: null,
  updatedAt: null,
  updatedBy: null,
  lastFireTime: null,
  countFrom: null,
  buffered: null,
  lastExecution: null,
  owedStarts: [],
  recentFires: [],
});

const sameDefinition = (a: ScheduleDefinition, b: ScheduleDefinition) => canonicalJson(a) === canonicalJson(b);
const later = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : Date.parse(a) >= Date.parse(b) ? a : b);

/** After this fire time only are fire times due (null: never: an inactive schedule). */
export function fireCursor(state: ScheduleState): string | null {
  return later(state.lastFireTime, state.countFrom);
}

function put(command: PutSchedule, state: ScheduleState): ScheduleEvent[] {
  const { data, metadata } = command;
  const change = { by: metadata.actor, at: metadata.now.toISOString() };
  if (state.status !== 'active') {
    const { workspaceId, name, definition, paused } = data;
    return [{ type: 'ScheduleDefined', data: { workspaceId, name, definition, paused, ...change } }];
  }
  const events: ScheduleEvent[] = [];
  if (state.definition === null || !sameDefinition(state.definition, data.definition)) {
    events.push({ type: 'ScheduleUpdated', data: { definition: data.definition, ...change } });
  }
  if (data.paused !== state.paused) events.push({ type: data.paused ? 'SchedulePaused' : 'ScheduleResumed', data: change });
  return events;
}

function trigger(command: TriggerSchedule, state: ScheduleState): ScheduleEvent[] {
  const { definition } = state;
  if (state.status !== 'active' || state.paused || definition === null) return [];
  const { previous } = command.data;
  // Decided on another execution than the one that ran last: look again.
  if ((previous?.executionId ?? null) !== (state.lastExecution?.executionId ?? null)) return [];
  const now = command.metadata.now;
  const at = now.toISOString();
  const events: ScheduleEvent[] = [];
  const fire = (fireTime: string) => {
    events.push({
      type: 'ScheduleFired',
      data: { fireTime, executionId: scheduledExecutionId(state.workspaceId, state.name, fireTime), at },
    });
  };
  const skip = (fireTime: string, reason: SkipReason, count: number | null) =>
    events.push({ type: 'ScheduleFireSkipped', data: { fireTime, reason, count, at } });

  let running = previous?.running ?? false;
  let buffered = state.buffered;
  // The waiting fire goes first, once the execution it waited for ended.
  if (buffered !== null && !running) {
    fire(buffered);
    running = true;
    buffered = null;
  }

  // Due: every fire time after the last one decided, up to now. Only the most recent can be on
  // time (and only within the grace); the others passed while no scheduler decided them.
  const cursor = new Date(fireCursor(state)!);
  // Two more than catch-up may start: with one on time, at least one missed is left to record when more were due.
  const due = dueFireTimes(definition, cursor, now, CATCHUP_LIMIT + 2);
  const times = due.times.map((t) => t.toISOString());
  const latest = times.at(-1);
  const onTime = latest !== undefined && now.getTime() - Date.parse(latest) <= MISFIRE_GRACE_MS ? [latest] : [];
  const missed = times.slice(0, times.length - onTime.length);
  const kept = definition.catchup === 'none' ? 0 : definition.catchup === 'last' ? 1 : CATCHUP_LIMIT;
  const caughtUp = missed.slice(Math.max(0, missed.length - kept));
  const left = missed.slice(0, missed.length - caughtUp.length);
  // One record stands for every missed fire time left out (a null count: more than were looked at).
  if (left.length > 0) skip(left[left.length - 1], 'missed', due.omitted ? null : left.length);

  for (const fireTime of [...caughtUp, ...onTime]) {
    if (definition.overlap === 'allow' || !running) {
      fire(fireTime);
      running = true;
    } else if (definition.overlap === 'skip') {
      skip(fireTime, 'overlap', 1);
    } else if (buffered === null) {
      events.push({ type: 'ScheduleFireBuffered', data: { fireTime, at } });
      buffered = fireTime;
    } else {
      skip(fireTime, 'buffer_full', 1);
    }
  }
  return events;
}

function failFire(command: FailFire, state: ScheduleState): ScheduleEvent[] {
  const { fireTime, executionId, error } = command.data;
  const record = state.recentFires.find((r) => r.fireTime === fireTime);
  // Only a fire that was to start, once.
  if (record?.outcome !== 'started' || record.executionId !== executionId) return [];
  return [{ type: 'ScheduleFireFailed', data: { fireTime, executionId, error, at: command.metadata.now.toISOString() } }];
}

function decide(command: ScheduleCommand, state: ScheduleState): ScheduleEvent[] {
  switch (command.type) {
    case 'PutSchedule':
      return put(command, state);
    case 'DeleteSchedule':
      if (state.status !== 'active') throw new NotFoundError('schedule not found');
      return [{ type: 'ScheduleDeleted', data: { by: command.metadata.actor, at: command.metadata.now.toISOString() } }];
    case 'TriggerSchedule':
      return trigger(command, state);
    case 'FailFire':
      return failFire(command, state);
  }
}

/** Records `record` among the recent fires: replaces the one of its fire time, keeps the newest few. */
function remember(fires: readonly FireRecord[], record: FireRecord): FireRecord[] {
  const others = fires.filter((r) => r.fireTime !== record.fireTime);
  return [record, ...others].sort((a, b) => Date.parse(b.fireTime) - Date.parse(a.fireTime)).slice(0, RECENT_FIRES);
}

const record = (fireTime: string, outcome: FireRecord['outcome'], at: string, fields: Partial<FireRecord> = {}): FireRecord => ({
  fireTime,
  outcome,
  executionId: null,
  reason: null,
  count: null,
  error: null,
  at,
  ...fields,
});

function evolve(state: ScheduleState, event: ScheduleEvent): ScheduleState {
  switch (event.type) {
    case 'ScheduleDefined': {
      const d = event.data;
      return {
        ...state,
        status: 'active',
        workspaceId: d.workspaceId,
        name: d.name,
        definition: d.definition,
        paused: d.paused,
        createdAt: d.at,
        createdBy: d.by,
        updatedAt: d.at,
        updatedBy: d.by,
        countFrom: d.at,
        buffered: null,
        lastExecution: null,
      };
    }
    case 'ScheduleUpdated': {
      const d = event.data;
      const previous = state.definition;
      const retimed = previous === null || previous.cron !== d.definition.cron || previous.timezone !== d.definition.timezone;
      return { ...state, definition: d.definition, updatedAt: d.at, updatedBy: d.by, countFrom: retimed ? d.at : state.countFrom };
    }
    case 'SchedulePaused':
      return { ...state, paused: true, updatedAt: event.data.at, updatedBy: event.data.by };
    case 'ScheduleResumed':
      // Fire times of the pause are not made up: counting starts again now.
      return { ...state, paused: false, buffered: null, countFrom: event.data.at, updatedAt: event.data.at, updatedBy: event.data.by };
    case 'ScheduleDeleted':
      return { ...state, status: 'deleted', buffered: null, updatedAt: event.data.at, updatedBy: event.data.by };
    case 'ScheduleFired': {
      const { fireTime, executionId, at } = event.data;
      const fired = { fireTime, executionId, at };
      const sameDecision = state.owedStarts.length > 0 && state.owedStarts[0].at === at;
      return {
        ...state,
        lastFireTime: later(state.lastFireTime, fireTime),
        buffered: state.buffered === fireTime ? null : state.buffered,
        lastExecution: fired,
        owedStarts: sameDecision ? [...state.owedStarts, fired] : [fired],
        recentFires: remember(state.recentFires, record(fireTime, 'started', at, { executionId })),
      };
    }
    case 'ScheduleFireBuffered': {
      const { fireTime, at } = event.data;
      return {
        ...state,
        lastFireTime: later(state.lastFireTime, fireTime),
        buffered: fireTime,
        recentFires: remember(state.recentFires, record(fireTime, 'buffered', at)),
      };
    }
    case 'ScheduleFireSkipped': {
      const { fireTime, reason, count, at } = event.data;
      return {
        ...state,
        lastFireTime: later(state.lastFireTime, fireTime),
        recentFires: remember(state.recentFires, record(fireTime, 'skipped', at, { reason, count })),
      };
    }
    case 'ScheduleFireFailed': {
      const { fireTime, executionId, error, at } = event.data;
      return {
        ...state,
        lastExecution: state.lastExecution?.executionId === executionId ? null : state.lastExecution,
        owedStarts: state.owedStarts.filter((f) => f.executionId !== executionId),
        recentFires: remember(state.recentFires, record(fireTime, 'failed', at, { executionId, error })),
      };
    }
  }
}

/**
 * A schedule's rules: a PUT records the definition (or what changed of it, or nothing); fire
 * times are decided once each, in order, after the last one decided, under the overlap and
 * catch-up policies; a fire's execution id is derived from the fire, so whoever starts it starts
 * the same execution.
 */
export const scheduleDecider: Decider<ScheduleCommand, ScheduleEvent, ScheduleState> = {
  decide,
  evolve,
  initialState: initialScheduleState,
};
