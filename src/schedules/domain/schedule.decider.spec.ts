import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { deciderSpecification } from '../../../test/support/core/decider-specification.js';
import { scheduledExecutionId } from '../../executions/domain/scheduled-execution-id.js';
import { CATCHUP_LIMIT, scheduleDecider, type ScheduleCommand, type TriggerSchedule } from './schedule.decider.js';
import type { ScheduleDefinition, ScheduleEvent } from './schedule.events.js';

const { given } = deciderSpecification(scheduleDecider);
const T0 = '2030-01-01T00:00:00.000Z';
const at = (iso: string) => ({ now: new Date(iso), actor: 'alice' });
const definition = (over: Partial<ScheduleDefinition> = {}): ScheduleDefinition => ({
  workflow: 'report',
  cron: '0 * * * *',
  timezone: 'UTC',
  input: {},
  overlap: 'allow',
  catchup: 'none',
  ...over,
});
const put = (over: Partial<ScheduleDefinition> = {}, paused = false, when = T0): ScheduleCommand => ({
  type: 'PutSchedule',
  data: { workspaceId: 'ws', name: 'hourly', definition: definition(over), paused },
  metadata: at(when),
});
const defined = (over: Partial<ScheduleDefinition> = {}, paused = false, when = T0): ScheduleEvent => ({
  type: 'ScheduleDefined',
  data: { workspaceId: 'ws', name: 'hourly', definition: definition(over), paused, by: 'alice', at: when },
});
const idOf = (fireTime: string) => scheduledExecutionId('ws', 'hourly', fireTime);
const trigger = (when: string, previous: { fireTime: string; running: boolean } | null = null): TriggerSchedule => ({
  type: 'TriggerSchedule',
  data: { previous: previous && { executionId: idOf(previous.fireTime), running: previous.running } },
  metadata: { now: new Date(when), actor: 'system:scheduler' },
});
const fired = (fireTime: string, when: string): ScheduleEvent => ({
  type: 'ScheduleFired',
  data: { fireTime, executionId: idOf(fireTime), at: when },
});
const skipped = (fireTime: string, reason: 'overlap' | 'buffer_full' | 'missed', count: number | null, when: string): ScheduleEvent => ({
  type: 'ScheduleFireSkipped',
  data: { fireTime, reason, count, at: when },
});
const buffered = (fireTime: string, when: string): ScheduleEvent => ({ type: 'ScheduleFireBuffered', data: { fireTime, at: when } });
const h = (hour: number, extra = '00:00.000') => `2030-01-01T${String(hour).padStart(2, '0')}:${extra}Z`;

describe('the schedule decider', () => {
  describe('PutSchedule', () => {
    it('defines a new schedule, paused or not', () => {
      given([]).when(put()).then([defined()]);
      given([])
        .when(put({}, true))
        .then([defined({}, true)]);
    });

    it('records nothing for the definition in force (a no-op PUT)', () => {
      given([defined()])
        .when(put({}, false, h(5)))
        .thenNothingHappens();
    });

    it('records what changed: the definition, the pause, or both', () => {
      const change = { by: 'alice', at: h(5) };
      given([defined()])
        .when(put({ cron: '*/5 * * * *' }, false, h(5)))
        .then([{ type: 'ScheduleUpdated', data: { definition: definition({ cron: '*/5 * * * *' }), ...change } }]);
      given([defined()])
        .when(put({}, true, h(5)))
        .then([{ type: 'SchedulePaused', data: change }]);
      given([defined({}, true)])
        .when(put({}, false, h(5)))
        .then([{ type: 'ScheduleResumed', data: change }]);
      given([defined()])
        .when(put({ overlap: 'skip' }, true, h(5)))
        .then([
          { type: 'ScheduleUpdated', data: { definition: definition({ overlap: 'skip' }), ...change } },
          { type: 'SchedulePaused', data: change },
        ]);
    });

    it('defines again after a delete, without deciding a fire time twice', () => {
      const history = [
        defined(),
        fired(h(1), h(1)),
        { type: 'ScheduleDeleted', data: { by: 'alice', at: h(1, '30:00.000') } } as ScheduleEvent,
      ];
      given(history)
        .when(put({}, false, h(1, '40:00.000')))
        .then([defined({}, false, h(1, '40:00.000'))]);
      given([...history, defined({}, false, h(0, '10:00.000'))])
        .when(trigger(h(1, '00:30.000'), null))
        .thenNothingHappens();
    });
  });

  describe('DeleteSchedule', () => {
    it('deletes an active schedule; a missing or deleted one is not found', () => {
      const deleted: ScheduleEvent = { type: 'ScheduleDeleted', data: { by: 'alice', at: h(2) } };
      given([defined()])
        .when({ type: 'DeleteSchedule', data: {}, metadata: at(h(2)) })
        .then([deleted]);
      given([])
        .when({ type: 'DeleteSchedule', data: {}, metadata: at(h(2)) })
        .thenThrows('not_found');
      given([defined(), deleted])
        .when({ type: 'DeleteSchedule', data: {}, metadata: at(h(3)) })
        .thenThrows('not_found');
    });
  });

  describe('TriggerSchedule', () => {
    it('fires a due fire time once, with the execution id derived from the fire', () => {
      given([defined()])
        .when(trigger(h(1, '00:00.400')))
        .then([fired(h(1), h(1, '00:00.400'))]);
    });

    it('fires nothing before the first fire time, nor a fire time already decided (a second scheduler)', () => {
      given([defined()])
        .when(trigger(h(0, '59:59.999')))
        .thenNothingHappens();
      given([defined(), fired(h(1), h(1))])
        .when(trigger(h(1, '00:01.000'), { fireTime: h(1), running: true }))
        .thenNothingHappens();
    });

    it('decides nothing on a stale view of the previous execution', () => {
      given([defined(), fired(h(1), h(1))])
        .when(trigger(h(2), null))
        .thenNothingHappens();
    });

    it('fires nothing while paused, and does not make up the pause after a resume', () => {
      given([defined({}, true)])
        .when(trigger(h(3)))
        .thenNothingHappens();
      const resumed: ScheduleEvent = { type: 'ScheduleResumed', data: { by: 'alice', at: h(3, '30:00.000') } };
      given([defined({}, true), resumed])
        .when(trigger(h(3, '30:10.000')))
        .thenNothingHappens();
      given([defined({}, true), resumed])
        .when(trigger(h(4)))
        .then([fired(h(4), h(4))]);
    });

    it('fires nothing for a deleted schedule', () => {
      given([defined(), { type: 'ScheduleDeleted', data: { by: 'alice', at: h(0, '30:00.000') } }])
        .when(trigger(h(1)))
        .thenNothingHappens();
    });

    describe('overlap', () => {
      it('skip: a fire while the previous execution runs is skipped with its reason; fires again once it ended', () => {
        const history = [defined({ overlap: 'skip' }), fired(h(1), h(1))];
        given(history)
          .when(trigger(h(2), { fireTime: h(1), running: true }))
          .then([skipped(h(2), 'overlap', 1, h(2))]);
        given(history)
          .when(trigger(h(2), { fireTime: h(1), running: false }))
          .then([fired(h(2), h(2))]);
      });

      it('allow: fires while the previous execution runs', () => {
        given([defined({ overlap: 'allow' }), fired(h(1), h(1))])
          .when(trigger(h(2), { fireTime: h(1), running: true }))
          .then([fired(h(2), h(2))]);
      });

      it('buffer_one: one fire waits, later ones are skipped, and the waiting one starts when the running one ended', () => {
        const history = [defined({ overlap: 'buffer_one' }), fired(h(1), h(1))];
        given(history)
          .when(trigger(h(2), { fireTime: h(1), running: true }))
          .then([buffered(h(2), h(2))]);
        given([...history, buffered(h(2), h(2))])
          .when(trigger(h(3), { fireTime: h(1), running: true }))
          .then([skipped(h(3), 'buffer_full', 1, h(3))]);
        given([...history, buffered(h(2), h(2))])
          .when(trigger(h(2, '10:00.000'), { fireTime: h(1), running: false }))
          .then([fired(h(2), h(2, '10:00.000'))]);
        // Ended just as the next fire time came: the waiting fire starts, the new one waits.
        given([...history, buffered(h(2), h(2))])
          .when(trigger(h(3), { fireTime: h(1), running: false }))
          .then([fired(h(2), h(3)), buffered(h(3), h(3))]);
      });
    });

    describe('catch-up after downtime', () => {
      // Defined at T0, hourly; the scheduler comes back at 05:20: 01:00 to 05:00 were missed.
      const back = h(5, '20:00.000');

      it('none: skips every missed fire time with one record', () => {
        given([defined({ catchup: 'none' })])
          .when(trigger(back))
          .then([skipped(h(5), 'missed', 5, back)]);
      });

      it('last: starts only the most recent missed fire time', () => {
        given([defined({ catchup: 'last' })])
          .when(trigger(back))
          .then([skipped(h(4), 'missed', 4, back), fired(h(5), back)]);
      });

      it('all: starts every missed fire time, oldest first', () => {
        given([defined({ catchup: 'all' })])
          .when(trigger(back))
          .then([1, 2, 3, 4, 5].map((hour) => fired(h(hour), back)));
      });

      it('all: starts at most the limit, the most recent ones, and records the rest as missed', () => {
        const minutely = defined({ cron: '* * * * *', catchup: 'all' });
        const now = '2030-01-01T05:00:30.000Z'; // 300 fire times missed, 05:00 on time
        const events = scheduleDecider.decide(trigger(now), fold(scheduleDecider, [minutely]));
        const starts = events.filter((e) => e.type === 'ScheduleFired');
        expect(starts).toHaveLength(CATCHUP_LIMIT + 1);
        expect(starts[0].data.fireTime).toBe('2030-01-01T03:20:00.000Z');
        expect(starts.at(-1)!.data.fireTime).toBe('2030-01-01T05:00:00.000Z');
        expect(events[0]).toEqual(skipped('2030-01-01T03:19:00.000Z', 'missed', null, now));
      });

      it('a fire time late by less than the grace is on time, whatever the policy', () => {
        given([defined({ catchup: 'none' })])
          .when(trigger(h(1, '00:59.000')))
          .then([fired(h(1), h(1, '00:59.000'))]);
        given([defined({ catchup: 'none' })])
          .when(trigger(h(1, '01:01.000')))
          .then([skipped(h(1), 'missed', 1, h(1, '01:01.000'))]);
      });

      it('catch-up fires obey the overlap policy', () => {
        given([defined({ catchup: 'all', overlap: 'skip' })])
          .when(trigger(h(3, '10:00.000')))
          .then([
            fired(h(1), h(3, '10:00.000')),
            skipped(h(2), 'overlap', 1, h(3, '10:00.000')),
            skipped(h(3), 'overlap', 1, h(3, '10:00.000')),
          ]);
      });
    });

    it('counts from a new cron expression, not from the old one', () => {
      const updated: ScheduleEvent = {
        type: 'ScheduleUpdated',
        data: { definition: definition({ cron: '30 * * * *', catchup: 'all' }), by: 'alice', at: h(3, '40:00.000') },
      };
      given([defined({ catchup: 'all' }), updated])
        .when(trigger(h(4, '30:00.000')))
        .then([fired(h(4, '30:00.000'), h(4, '30:00.000'))]);
    });
  });

  describe('FailFire', () => {
    it('records a refused start once; the schedule no longer waits for that execution', () => {
      const failed: ScheduleEvent = {
        type: 'ScheduleFireFailed',
        data: { fireTime: h(1), executionId: idOf(h(1)), error: { code: 'secret_not_found', message: 'no secret' }, at: h(1) },
      };
      const fail: ScheduleCommand = {
        type: 'FailFire',
        data: { fireTime: h(1), executionId: idOf(h(1)), error: { code: 'secret_not_found', message: 'no secret' } },
        metadata: at(h(1)),
      };
      given([defined({ overlap: 'skip' }), fired(h(1), h(1))])
        .when(fail)
        .then([failed]);
      given([defined({ overlap: 'skip' }), fired(h(1), h(1)), failed])
        .when(fail)
        .thenNothingHappens();
      given([defined({ overlap: 'skip' }), fired(h(1), h(1)), failed])
        .when(trigger(h(2), null))
        .then([fired(h(2), h(2))]);
    });
  });

  it('folds what the detail shows: the last fire time, the owed starts of the latest decision, recent fires newest first', () => {
    const state = fold(scheduleDecider, [
      defined({ catchup: 'all' }),
      fired(h(1), h(2, '30:00.000')),
      fired(h(2), h(2, '30:00.000')),
      skipped(h(3), 'overlap', 1, h(3)),
    ]);
    expect(state.lastFireTime).toBe(h(3));
    expect(state.owedStarts.map((f) => f.fireTime)).toEqual([h(1), h(2)]);
    expect(state.recentFires.map((r) => [r.fireTime, r.outcome])).toEqual([
      [h(3), 'skipped'],
      [h(2), 'started'],
      [h(1), 'started'],
    ]);
  });
});
