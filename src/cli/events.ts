import type { ExecutionEvent, ExecutionStatus } from './api-types.js';
import { clock, compact } from './output.js';

/** The event types that end an execution, and the status each ends it with. */
export const FINAL_EVENTS: Record<string, ExecutionStatus> = {
  ExecutionSucceeded: 'succeeded',
  ExecutionFailed: 'failed',
  ExecutionTimedOut: 'timed_out',
  ExecutionCancelled: 'cancelled',
};

function errorText(error: unknown): string {
  const e = error as { code?: string; message?: string } | null | undefined;
  if (!e) return '';
  return e.message ? `${e.code}: ${e.message}` : String(e.code);
}

function short(id: unknown): string {
  return typeof id === 'string' ? id.slice(0, 8) : '?';
}

/**
 * What an event says to a person, on one line without its time; null for events that say
 * nothing new to someone watching (lease extensions).
 */
export function describeEvent(event: Pick<ExecutionEvent, 'type' | 'data'>): string | null {
  const d = event.data ?? {};
  const node = typeof d.nodeId === 'string' ? d.nodeId : '?';
  switch (event.type) {
    case 'ExecutionStarted': {
      const workflow = d.workflow as { name?: string; revision?: number } | undefined;
      return `execution started: workflow ${workflow?.name ?? '?'} revision ${workflow?.revision ?? '?'}, by ${String(d.startedBy ?? '?')}`;
    }
    case 'AttemptScheduled':
      return `attempt ${String(d.attemptNumber)} scheduled (${String(d.reason)})`;
    case 'ExecutionAwaitingSlot':
      return `attempt ${String(d.attemptNumber)} waits for a slot of the workspace's quota`;
    case 'AttemptClaimed':
      return `attempt ${short(d.attemptId)} claimed by worker ${String(d.workerId)}`;
    case 'LeaseExtended':
      return null;
    case 'NodeStarted':
      return `node ${node} started`;
    case 'NodeSucceeded':
      return `node ${node} succeeded: ${compact(d.output, 80)}`;
    case 'NodeFailed':
      return `node ${node} failed: ${errorText(d.error)}`;
    case 'NodeSkipped':
      return `node ${node} skipped (${String(d.reason)})`;
    case 'NodeAwaitingApproval':
      return `node ${node} awaits approval, action digest ${String(d.actionDigest)}`;
    case 'MapItemsStarted':
      return `map ${node}: ${Array.isArray(d.indexes) ? d.indexes.length : 0} item(s) started`;
    case 'MapItemsCompleted':
      return `map ${node}: ${Array.isArray(d.items) ? d.items.length : 0} item(s) succeeded`;
    case 'MapItemsFailed':
      return `map ${node}: ${Array.isArray(d.items) ? d.items.length : 0} item(s) failed`;
    case 'AttemptSuspended':
      return `attempt ${short(d.attemptId)} suspended at ${node}`;
    case 'SlotYielded':
      return "gave its slot of the workspace's quota back while it waits for its children";
    case 'ApprovalGranted':
      return `node ${node} approved by ${String(d.decidedBy)}${d.comment ? `: ${String(d.comment)}` : ''}`;
    case 'ApprovalRejected':
      return `node ${node} rejected by ${String(d.decidedBy)}${d.comment ? `: ${String(d.comment)}` : ''}`;
    case 'AttemptSucceeded':
      return `attempt ${short(d.attemptId)} succeeded`;
    case 'AttemptFailed':
      return `attempt ${short(d.attemptId)} failed: ${errorText(d.error)}`;
    case 'AttemptTimedOut':
      return `attempt ${short(d.attemptId)} timed out (${String(d.reason)})`;
    case 'AttemptCancelled':
      return `attempt ${short(d.attemptId)} cancelled`;
    case 'CancelRequested':
      return `cancel requested by ${String(d.requestedBy)}${d.reason ? `: ${String(d.reason)}` : ''}`;
    case 'RedriveRequested':
      return `redrive requested by ${String(d.requestedBy)} (attempt ${String(d.attemptNumber)})`;
    case 'ExecutionSucceeded':
      return `execution succeeded: ${compact(d.output)}`;
    case 'ExecutionFailed':
      return `execution failed: ${errorText(d.error)}`;
    case 'ExecutionTimedOut':
      return `execution timed out (${String(d.reason)})`;
    case 'ExecutionCancelled':
      return `execution cancelled${d.reason ? `: ${String(d.reason)}` : ''}`;
    default:
      return event.type;
  }
}

/** A live line: `HH:MM:SS  <description>`, or null when the event says nothing new. */
export function eventLine(event: Pick<ExecutionEvent, 'type' | 'data' | 'recordedAt'>, prefix = ''): string | null {
  const text = describeEvent(event);
  return text === null ? null : `${clock(event.recordedAt)}  ${prefix}${text}\n`;
}
