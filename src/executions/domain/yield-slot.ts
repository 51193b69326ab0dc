import type { ExecutionEvent } from './execution.events.js';
import { type StartedExecution, currentAttempt, evolve, isFinal } from './execution.state.js';
import { settledInTry } from './tasks.js';

/**
 * Children are counted by their workspace's quota like any run, so a parent that held its slot
 * while it waited for them could wait for ever (a bound of 1, and the child queued behind its own
 * parent). A run that holds a slot and, once `events` are recorded, waits for nothing but child
 * executions gives the slot back in the same append (`SlotYielded`); the admission releases it,
 * and the run's resume waits for a slot again (`resumeAttempt`). So every run that holds a slot
 * can go on without another run's slot, and a tree always has a member that can progress.
 */
export function withSlotYielded(s: StartedExecution, events: ExecutionEvent[], now: Date): ExecutionEvent[] {
  // Documents folded before quotas have no slot fields: they never held a slot.
  if (events.length === 0 || !s.slotAttemptId) return events;
  const after = events.reduce<StartedExecution>((state, event) => evolve(state, event) as StartedExecution, s);
  if (!waitsOnlyForChildren(after)) return events;
  return [...events, { type: 'SlotYielded', data: { attemptId: after.slotAttemptId!, at: now.toISOString() } }];
}

function waitsOnlyForChildren(s: StartedExecution): boolean {
  if (isFinal(s) || s.cancelRequest || !s.slotAttemptId || s.awaitingSlot) return false;
  if (currentAttempt(s)?.status !== 'suspended') return false;
  const open = s.waits.filter((w) => (w.kind === 'approval' ? s.pendingApproval?.nodeId === w.nodeId : !settledInTry(s, w.nodeId)));
  return open.length > 0 && open.every((w) => w.kind === 'subworkflow');
}
