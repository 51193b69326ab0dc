import { Cron } from 'croner';

/**
 * Fire times of a cron expression in a time zone, computed by croner (docs/architecture.md,
 * "Schedules"): 5 fields (minute first), or 6 with seconds first; day of month and day of week
 * combine with OR, as in Vixie cron. Daylight-saving transitions are croner's: a fixed local time
 * that falls in a spring-forward gap fires once at the first valid time after it, one that occurs
 * twice in a fall-back fires once; interval patterns (a wildcard or step in the second, minute or
 * hour field) skip the missing times and fire on both occurrences of a repeated time. Pure: the
 * same expression, zone and instants always give the same times.
 */
export interface CronSpec {
  cron: string;
  timezone: string;
}

const compiled = new Map<string, Cron>();
const COMPILED_LIMIT = 10_000;

function compile({ cron, timezone }: CronSpec): Cron {
  const key = `${timezone} ${cron}`;
  let found = compiled.get(key);
  if (found === undefined) {
    found = new Cron(cron, { timezone, mode: '5-or-6-parts' });
    if (compiled.size >= COMPILED_LIMIT) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, found);
  }
  return found;
}

/** Whether `timezone` names an IANA time zone this runtime knows (`UTC`, `Europe/Berlin`; no bare offsets). */
export function isTimeZone(timezone: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(timezone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** What is wrong with a cron expression, or null when it is one that fires (validated in UTC). */
export function cronProblem(cron: string): string | null {
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6)
    return `expected 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; got ${fields}`;
  let parsed: Cron;
  try {
    parsed = new Cron(cron, { timezone: 'UTC', mode: '5-or-6-parts' });
  } catch (error) {
    return (error instanceof Error ? error.message : String(error)).replace(/^CronPattern: /, '');
  }
  return parsed.nextRun(new Date(0)) === null ? 'the expression never fires' : null;
}

/** The first `count` fire times strictly after `after`. */
export function fireTimesAfter(spec: CronSpec, after: Date, count: number): Date[] {
  return compile(spec).nextRuns(count, after);
}

/**
 * How many fire times after now a schedule's minimum interval is checked over: croner computes
 * one in a zone in about 0.2 ms, so the check costs a PUT some 20 ms at most.
 */
export const INTERVAL_CHECK_FIRES = 100;

/** Two consecutive fire times closer than a minimum interval. */
export interface CloseFireTimes {
  first: Date;
  second: Date;
}

/**
 * The first two consecutive fire times among the next `count` after `after` that are less than
 * `minIntervalMs` apart, or null. A cron's gaps repeat with its coarsest field, so its closest
 * pair shows within the first fire times (a daylight-saving change beyond them may bring two
 * closer, by the hour it moves).
 */
export function fireTimesCloserThan(spec: CronSpec, after: Date, minIntervalMs: number, count: number): CloseFireTimes | null {
  const cron = compile(spec);
  let previous = cron.nextRun(after);
  for (let seen = 1; previous !== null && seen < count; seen++) {
    const next = cron.nextRun(previous);
    if (next === null) return null;
    if (next.getTime() - previous.getTime() < minIntervalMs) return { first: previous, second: next };
    previous = next;
  }
  return null;
}

/** The first fire time strictly after `after`; null when there is none. */
export function nextFireTime(spec: CronSpec, after: Date): Date | null {
  return compile(spec).nextRun(after);
}

export interface DueFireTimes {
  /** Fire times in (after, now], oldest first: all of them, or the `limit` most recent. */
  times: Date[];
  /** More fire times lie in the window before `times` (the window held more than `limit`). */
  omitted: boolean;
}

/** The fire times due between `after` (exclusive) and `now` (inclusive), at most the `limit` most recent. */
export function dueFireTimes(spec: CronSpec, after: Date, now: Date, limit: number): DueFireTimes {
  const cron = compile(spec);
  const times: Date[] = [];
  // Forward from `after`: a quiet schedule costs a step or two, however long ago its last fire was.
  for (let next = cron.nextRun(after); next !== null && next.getTime() <= now.getTime(); next = cron.nextRun(next)) {
    times.push(next);
    // More than `limit` in the window: take the most recent ones backwards from now instead.
    if (times.length > limit) {
      const recent = cron.previousRuns(limit, new Date(now.getTime() + 1)).filter((t) => t.getTime() > after.getTime());
      return { times: recent.reverse(), omitted: true };
    }
  }
  return { times, omitted: false };
}
