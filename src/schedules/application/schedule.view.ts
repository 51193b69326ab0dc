import { fireTimesAfter } from '../domain/cron.js';
import { fireCursor, type ScheduleState } from '../domain/schedule.decider.js';

/** How many coming fire times the detail shows. */
const NEXT_FIRE_TIMES = 5;

/** A schedule as the API shows it: its definition, its coming fire times and its recent fires. */
export function toScheduleView(state: ScheduleState, position: string | null, now: Date) {
  const definition = state.definition!;
  const cursor = fireCursor(state);
  // After now, and after the last fire time decided (a fire time is never shown twice).
  const from = cursor !== null && Date.parse(cursor) > now.getTime() ? new Date(cursor) : now;
  return {
    workspaceId: state.workspaceId,
    name: state.name,
    ...definition,
    paused: state.paused,
    nextFireTimes: state.paused ? [] : fireTimesAfter(definition, from, NEXT_FIRE_TIMES).map((t) => t.toISOString()),
    lastFireTime: state.lastFireTime,
    recentFires: state.recentFires.map((f) => ({
      fireTime: f.fireTime,
      outcome: f.outcome,
      executionId: f.executionId,
      reason: f.reason,
      count: f.count,
      error: f.error,
      decidedAt: f.at,
    })),
    createdAt: state.createdAt!,
    createdBy: state.createdBy!,
    updatedAt: state.updatedAt!,
    updatedBy: state.updatedBy!,
    position,
  };
}

export type ScheduleView = ReturnType<typeof toScheduleView>;
