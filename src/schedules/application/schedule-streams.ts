import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../../core/event-store.port.js';
import { FoldedStreams, type FoldedOutcome, type FoldedStream } from '../../core/folded-streams.js';
import { ID_GENERATOR, type IdGenerator, uuidV5 } from '../../core/ids.js';
import { scheduleRegisterDecider, type ScheduleRegisterCommand, type ScheduleRegisterState } from '../domain/schedule-register.decider.js';
import {
  parseScheduleRegisterEvent,
  SCHEDULE_REGISTER_SCHEMA_VERSION,
  type ScheduleRegisterEvent,
} from '../domain/schedule-register.events.js';
import { scheduleDecider, type ScheduleCommand, type ScheduleState, type TriggerSchedule } from '../domain/schedule.decider.js';
import { parseScheduleEvent, SCHEDULE_SCHEMA_VERSION, type ScheduleDefinition, type ScheduleEvent } from '../domain/schedule.events.js';
import { scheduleRegisterStreamId, scheduleStreamId } from '../domain/schedule-identity.js';

export type ScheduleStream = FoldedStream<ScheduleState>;
export type ScheduleOutcome = FoldedOutcome<ScheduleEvent, ScheduleState>;
export type ScheduleRegisterOutcome = FoldedOutcome<ScheduleRegisterEvent, ScheduleRegisterState>;

/** Who decides fire times: the scheduler role. */
export const SCHEDULER_ACTOR = 'system:scheduler';

/**
 * The schedule streams (`schedule-<ws>-<name>`), read straight from the store (a GET, a PUT and
 * every fire decision see the stream as last written) and folded incrementally. Every decision
 * is appended with the stream's expected revision: two schedulers that decide the same fire time
 * append once, and the other decides again on what the first wrote (nothing left to decide).
 * One instance per process (ScheduleStreamsModule).
 */
@Injectable()
export class ScheduleStreams {
  private readonly streams: FoldedStreams<ScheduleCommand, ScheduleEvent, ScheduleState>;
  private readonly registers: FoldedStreams<ScheduleRegisterCommand, ScheduleRegisterEvent, ScheduleRegisterState>;

  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(CLOCK) readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {
    this.streams = new FoldedStreams({ store, decider: scheduleDecider, parseEvent: parseScheduleEvent, capacity: 10_000 });
    this.registers = new FoldedStreams({
      store,
      decider: scheduleRegisterDecider,
      parseEvent: parseScheduleRegisterEvent,
      capacity: 10_000,
    });
  }

  /** The workspace's schedule register as last written. */
  readRegister(workspaceId: string): Promise<FoldedStream<ScheduleRegisterState>> {
    return this.registers.read(scheduleRegisterStreamId(workspaceId));
  }

  /**
   * Takes a place in the workspace's register for `name` while fewer than `limit` are taken (a
   * name that holds one already takes nothing); ScheduleLimitReachedError when none is left.
   * `existing` seeds a register that has no event yet.
   */
  register(workspaceId: string, name: string, limit: number, existing: readonly string[] | null, actor: string) {
    return this.handleRegister(workspaceId, {
      type: 'RegisterSchedule',
      data: { name, limit, existing },
      metadata: { now: this.clock.now(), actor },
    });
  }

  /** Gives back the place `name` holds in the workspace's register, if it holds one. */
  unregister(workspaceId: string, name: string, actor: string): Promise<ScheduleRegisterOutcome> {
    return this.handleRegister(workspaceId, { type: 'UnregisterSchedule', data: { name }, metadata: { now: this.clock.now(), actor } });
  }

  read(workspaceId: string, name: string): Promise<ScheduleStream> {
    return this.streams.read(scheduleStreamId(workspaceId, name));
  }

  put(workspaceId: string, name: string, definition: ScheduleDefinition, paused: boolean, actor: string): Promise<ScheduleOutcome> {
    return this.handle(workspaceId, name, {
      type: 'PutSchedule',
      data: { workspaceId, name, definition, paused },
      metadata: { now: this.clock.now(), actor },
    });
  }

  delete(workspaceId: string, name: string, actor: string): Promise<ScheduleOutcome> {
    return this.handle(workspaceId, name, { type: 'DeleteSchedule', data: {}, metadata: { now: this.clock.now(), actor } });
  }

  /**
   * Decides the fire times due at `now`, once: a conflict is not retried here (the scheduler
   * looks at the previous execution again before deciding again).
   */
  trigger(workspaceId: string, name: string, previous: TriggerSchedule['data']['previous'], now: Date): Promise<ScheduleOutcome> {
    return this.handle(workspaceId, name, { type: 'TriggerSchedule', data: { previous }, metadata: { now, actor: SCHEDULER_ACTOR } }, 0);
  }

  failFire(workspaceId: string, name: string, fire: { fireTime: string; executionId: string }, error: { code: string; message: string }) {
    return this.handle(workspaceId, name, {
      type: 'FailFire',
      data: { ...fire, error },
      metadata: { now: this.clock.now(), actor: SCHEDULER_ACTOR },
    });
  }

  private handleRegister(workspaceId: string, command: ScheduleRegisterCommand): Promise<ScheduleRegisterOutcome> {
    const actor = command.metadata.actor;
    return this.registers.handle(scheduleRegisterStreamId(workspaceId), command, {
      // Random ids suffice: a retried append finds the name registered (or not) and decides nothing.
      eventId: () => this.ids.uuid(),
      metadata: { schemaVersion: SCHEDULE_REGISTER_SCHEMA_VERSION, actor, workspaceId },
    });
  }

  private handle(workspaceId: string, name: string, command: ScheduleCommand, maxConflictRetries?: number): Promise<ScheduleOutcome> {
    const actor = command.metadata.actor;
    return this.streams.handle(scheduleStreamId(workspaceId, name), command, {
      // A fire decision is named by its fire time: a retried append of it fails as a duplicate.
      eventId: (index, event) =>
        'fireTime' in event.data ? uuidV5(`schedule:${workspaceId}:${name}:${event.type}:${event.data.fireTime}`) : this.ids.uuid(),
      metadata: { schemaVersion: SCHEDULE_SCHEMA_VERSION, actor, workspaceId },
      maxConflictRetries,
    });
  }
}
