import { describe, expect, it } from '@jest/globals';
import { deciderSpecification } from '../../../test/support/core/decider-specification.js';
import { scheduleRegisterDecider, ScheduleLimitReachedError, type ScheduleRegisterCommand } from './schedule-register.decider.js';
import type { ScheduleRegisterEvent } from './schedule-register.events.js';

const AT = new Date('2030-01-01T00:00:00.000Z');
const { given } = deciderSpecification(scheduleRegisterDecider);

const register = (name: string, limit = 2, existing: string[] | null = null): ScheduleRegisterCommand => ({
  type: 'RegisterSchedule',
  data: { name, limit, existing },
  metadata: { now: AT, actor: 'alice' },
});
const unregister = (name: string): ScheduleRegisterCommand => ({
  type: 'UnregisterSchedule',
  data: { name },
  metadata: { now: AT, actor: 'alice' },
});
const registered = (name: string): ScheduleRegisterEvent => ({
  type: 'ScheduleRegistered',
  data: { name, by: 'alice', at: AT.toISOString() },
});
const seeded = (names: string[]): ScheduleRegisterEvent => ({
  type: 'ScheduleRegisterSeeded',
  data: { names, by: 'alice', at: AT.toISOString() },
});
const unregistered = (name: string): ScheduleRegisterEvent => ({
  type: 'ScheduleUnregistered',
  data: { name, by: 'alice', at: AT.toISOString() },
});

describe('RegisterSchedule', () => {
  it('gives a new name a place while fewer than the limit are taken', () => {
    given([registered('a')])
      .when(register('b'))
      .then([registered('b')]);
  });

  it('refuses a name beyond the limit, saying the limit', () => {
    given([registered('a'), registered('b')])
      .when(register('c'))
      .thenThrows(ScheduleLimitReachedError, (error) => {
        expect(error.code).toBe('limit_reached');
        expect(error.details).toEqual({ limit: 2, resource: 'schedules' });
      });
  });

  it('takes nothing for a name that holds a place already, even at the limit', () => {
    given([registered('a'), registered('b')])
      .when(register('b'))
      .thenNothingHappens();
  });

  it('counts a place given back as free again', () => {
    given([registered('a'), registered('b'), unregistered('a')])
      .when(register('c'))
      .then([registered('c')]);
  });
});

describe('RegisterSchedule on a register without events', () => {
  it('seeds it with the schedules the workspace held before, and counts them', () => {
    given([])
      .when(register('c', 3, ['b', 'a']))
      .then([seeded(['a', 'b']), registered('c')]);
  });

  it('refuses beyond the limit counting them, and records no seed with the refusal', () => {
    given([])
      .when(register('c', 2, ['a', 'b']))
      .thenThrows(ScheduleLimitReachedError);
  });

  it('records only the seed for a name it holds already', () => {
    given([])
      .when(register('a', 2, ['a']))
      .then([seeded(['a'])]);
  });

  it('leaves out what existed once the register has events', () => {
    given([seeded([])])
      .when(register('c', 1, ['x']))
      .then([registered('c')]);
  });
});

describe('UnregisterSchedule', () => {
  it('gives back the place of a registered name', () => {
    given([registered('a')])
      .when(unregister('a'))
      .then([unregistered('a')]);
  });

  it('records nothing for a name that holds no place', () => {
    given([registered('a'), unregistered('a')])
      .when(unregister('a'))
      .thenNothingHappens();
    given([]).when(unregister('x')).thenNothingHappens();
  });
});
