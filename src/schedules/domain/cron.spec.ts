import { describe, expect, it } from '@jest/globals';
import { cronProblem, dueFireTimes, fireTimesAfter, fireTimesCloserThan, INTERVAL_CHECK_FIRES, isTimeZone } from './cron.js';

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());
const berlin = (cron: string) => ({ cron, timezone: 'Europe/Berlin' });

describe('fire times', () => {
  it('reads 5 fields minute first, and 6 with seconds first', () => {
    expect(iso(fireTimesAfter({ cron: '15 3 * * *', timezone: 'UTC' }, new Date('2030-01-01T00:00:00Z'), 2))).toEqual([
      '2030-01-01T03:15:00.000Z',
      '2030-01-02T03:15:00.000Z',
    ]);
    expect(iso(fireTimesAfter({ cron: '*/20 * * * * *', timezone: 'UTC' }, new Date('2030-01-01T00:00:00Z'), 3))).toEqual([
      '2030-01-01T00:00:20.000Z',
      '2030-01-01T00:00:40.000Z',
      '2030-01-01T00:01:00.000Z',
    ]);
  });

  it('fires at local times of the time zone', () => {
    expect(iso(fireTimesAfter({ cron: '0 9 * * *', timezone: 'America/New_York' }, new Date('2030-01-01T00:00:00Z'), 1))).toEqual([
      '2030-01-01T14:00:00.000Z',
    ]);
  });

  describe('across daylight-saving transitions (Europe/Berlin, 2026)', () => {
    it('30 2 * * *: in March 02:30 does not exist and fires once at 03:00; in October it exists twice and fires once', () => {
      expect(iso(fireTimesAfter(berlin('30 2 * * *'), new Date('2026-03-27T12:00:00Z'), 3))).toEqual([
        '2026-03-28T01:30:00.000Z', // 02:30 CET
        '2026-03-29T01:00:00.000Z', // 03:00 CEST, the first time after the gap
        '2026-03-30T00:30:00.000Z', // 02:30 CEST
      ]);
      expect(iso(fireTimesAfter(berlin('30 2 * * *'), new Date('2026-10-23T12:00:00Z'), 3))).toEqual([
        '2026-10-24T00:30:00.000Z', // 02:30 CEST
        '2026-10-25T00:30:00.000Z', // 02:30 CEST, its first occurrence only
        '2026-10-26T01:30:00.000Z', // 02:30 CET
      ]);
    });

    it('0 * * * *: hourly on every real hour, none in the gap, both occurrences of the repeated hour', () => {
      expect(iso(fireTimesAfter(berlin('0 * * * *'), new Date('2026-03-28T23:30:00Z'), 3))).toEqual([
        '2026-03-29T00:00:00.000Z', // 01:00 CET
        '2026-03-29T01:00:00.000Z', // 03:00 CEST (02:00 does not exist)
        '2026-03-29T02:00:00.000Z', // 04:00 CEST
      ]);
      expect(iso(fireTimesAfter(berlin('0 * * * *'), new Date('2026-10-24T23:30:00Z'), 3))).toEqual([
        '2026-10-25T00:00:00.000Z', // 02:00 CEST
        '2026-10-25T01:00:00.000Z', // 02:00 CET
        '2026-10-25T02:00:00.000Z', // 03:00 CET
      ]);
    });
  });

  describe('due fire times', () => {
    const hourly = { cron: '0 * * * *', timezone: 'UTC' };
    const after = new Date('2030-01-01T00:00:00Z');

    it('are those after the cursor up to now, now included, oldest first', () => {
      expect(dueFireTimes(hourly, after, new Date('2030-01-01T03:00:00Z'), 10)).toEqual({
        times: [1, 2, 3].map((h) => new Date(`2030-01-01T0${h}:00:00Z`)),
        omitted: false,
      });
      expect(dueFireTimes(hourly, after, new Date('2030-01-01T00:59:59.999Z'), 10)).toEqual({ times: [], omitted: false });
    });

    it('are the most recent ones when more than the limit are due', () => {
      const due = dueFireTimes(hourly, after, new Date('2030-01-03T00:30:00Z'), 5);
      expect(due.omitted).toBe(true);
      expect(iso(due.times)).toEqual(['20', '21', '22', '23'].map((h) => `2030-01-02T${h}:00:00.000Z`).concat('2030-01-03T00:00:00.000Z'));
    });
  });
});

describe('validation', () => {
  it.each(['* * * * *', '0 30 2 * * *', '*/5 9-17 * * 1-5', '0 0 1 jan *'])('accepts %p', (cron) => {
    expect(cronProblem(cron)).toBeNull();
  });

  it.each([
    ['4 fields', '* * * *', /expected 5 fields/],
    ['7 fields', '0 0 0 1 1 * 2030', /expected 5 fields/],
    ['a minute out of range', '61 * * * *', /minute/],
    ['garbage', 'every day', /expected 5 fields/],
    ['a date that never comes', '0 0 30 2 *', /never fires/],
  ])('refuses %s', (_, cron, message) => {
    expect(cronProblem(cron)).toMatch(message);
  });

  it('knows IANA time zones and nothing else', () => {
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    expect(isTimeZone('+01:00')).toBe(false);
    expect(isTimeZone('')).toBe(false);
  });
});

describe('fire times closer than a minimum interval', () => {
  const after = new Date('2030-01-01T00:00:00Z');
  const utc = (cron: string) => ({ cron, timezone: 'UTC' });

  it('finds every second and every 30 s as closer than a minute, at the first two fire times', () => {
    expect(fireTimesCloserThan(utc('* * * * * *'), after, 60_000, INTERVAL_CHECK_FIRES)).toEqual({
      first: new Date('2030-01-01T00:00:01Z'),
      second: new Date('2030-01-01T00:00:02Z'),
    });
    expect(fireTimesCloserThan(utc('*/30 * * * * *'), after, 60_000, INTERVAL_CHECK_FIRES)?.first).toEqual(
      new Date('2030-01-01T00:00:30Z'),
    );
  });

  it('finds a close pair that a list of minutes makes once an hour', () => {
    expect(fireTimesCloserThan(utc('0,59 * * * *'), after, 5 * 60_000, INTERVAL_CHECK_FIRES)).toEqual({
      first: new Date('2030-01-01T00:59:00Z'),
      second: new Date('2030-01-01T01:00:00Z'),
    });
  });

  it('lets every minute, a fixed second of each minute, and a daily time pass a minute', () => {
    for (const cron of ['* * * * *', '30 * * * * *', '15 3 * * *'])
      expect(fireTimesCloserThan(utc(cron), after, 60_000, INTERVAL_CHECK_FIRES)).toBeNull();
  });
});
