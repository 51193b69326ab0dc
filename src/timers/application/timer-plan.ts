import type { ExecutionEvent } from '../../executions/domain/execution.events.js';

/** What one batch of execution events changes in the table of live timers. */
export interface TimerPlan {
  upserts: { timerId: string; executionId: string; dueMs: number }[];
  removals: string[];
}

/**
 * A scheduled timer becomes a row; a fired or cancelled one leaves. A timer scheduled and ended
 * in the same batch never becomes one.
 */
export function planTimers(events: readonly { executionId: string; event: ExecutionEvent }[]): TimerPlan {
  const upserts = new Map<string, TimerPlan['upserts'][number]>();
  const removals = new Set<string>();
  for (const { executionId, event } of events) {
    if (event.type === 'TimerScheduled') {
      upserts.set(event.data.timerId, { timerId: event.data.timerId, executionId, dueMs: Date.parse(event.data.dueAt) });
    } else if (event.type === 'TimerFired' || event.type === 'TimerCancelled') {
      if (!upserts.delete(event.data.timerId)) removals.add(event.data.timerId);
    }
  }
  return { upserts: [...upserts.values()], removals: [...removals] };
}
