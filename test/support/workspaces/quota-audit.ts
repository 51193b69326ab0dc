import type { EventStore, RecordedEvent } from '../../../src/core/event-store.port.js';
import { quotaStreamId } from '../../../src/workspaces/domain/workspace-identity.js';

/** What ends a run: its execution's end, or its slot given back while it waits for its children. */
const ENDINGS = new Set(['ExecutionSucceeded', 'ExecutionFailed', 'ExecutionTimedOut', 'ExecutionCancelled', 'SlotYielded']);

/**
 * One run of an execution as the log records it: from its admission (its first attempt scheduled,
 * or the resume of a run that gave its slot back) to its end (or the slot given back).
 */
export interface RunInterval {
  executionId: string;
  /** Position of the AttemptScheduled of a start, a redrive, or a resume after the slot was given back. */
  admitted: string;
  /** Position of the event that ended the run; null while it runs. */
  ended: string | null;
}

/** Every event of the log's execution streams, in log order. */
export async function executionEvents(store: EventStore): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await store.readAll({ after, maxCount: 1_000, streamPrefixes: ['execution-'] });
    events.push(...page);
    if (page.length < 1_000) return events;
    after = page[page.length - 1].position;
  }
}

/**
 * What an auditor reads from the log alone: for each run of a workspace's executions, the
 * position of its admission and of its end, and the most runs that were ever admitted and not
 * ended at one point of the log (a sweep over positions, which totally order the log).
 */
export async function auditRuns(store: EventStore, workspaceId: string): Promise<{ runs: RunInterval[]; maxConcurrent: number }> {
  const runs: RunInterval[] = [];
  const open = new Map<string, RunInterval>();
  let concurrent = 0;
  let maxConcurrent = 0;
  for (const event of await executionEvents(store)) {
    if (event.metadata['workspaceId'] !== workspaceId) continue;
    const executionId = event.streamId.slice('execution-'.length);
    const reason = (event.data as { reason?: unknown }).reason;
    // A resume scheduled while the run is not open admits a run that gave its slot back; any other resumes one that holds it.
    const admits = reason === 'start' || reason === 'redrive' || (reason === 'resume' && !open.has(executionId));
    if (event.type === 'AttemptScheduled' && admits) {
      const run: RunInterval = { executionId, admitted: event.position, ended: null };
      runs.push(run);
      open.set(executionId, run);
      maxConcurrent = Math.max(maxConcurrent, ++concurrent);
    } else if (ENDINGS.has(event.type) && open.has(executionId)) {
      open.get(executionId)!.ended = event.position;
      open.delete(executionId);
      concurrent--;
    }
  }
  return { runs, maxConcurrent };
}

/** Replays a workspace's quota semaphore: the most slots ever held at once, and the grants in order. */
export async function auditSemaphore(store: EventStore, workspaceId: string): Promise<{ maxHeld: number; granted: string[] }> {
  const held = new Set<string>();
  const granted: string[] = [];
  let maxHeld = 0;
  for (const event of await store.readStream(quotaStreamId(workspaceId))) {
    const data = event.data as { executionId: string; attemptId: string };
    if (event.type === 'SlotGranted') {
      held.add(data.attemptId);
      granted.push(data.executionId);
      maxHeld = Math.max(maxHeld, held.size);
    } else held.delete(data.attemptId);
  }
  return { maxHeld, granted };
}
