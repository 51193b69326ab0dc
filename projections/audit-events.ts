import { z } from 'zod';
import { UNKNOWN_ACTOR, workerActor } from '../src/core/actors.js';
import type { Position, RecordedEvent } from '../src/core/event-store.port.js';
import { IDENTIFIER_PATTERN, UUID_PATTERN } from '../src/core/ids.js';
import { executionStreamId, parseExecutionEvent } from '../src/executions/domain/execution-event.parser.js';
import type { ProjectionSource } from '../src/projector/projection-definition.js';
import { parseWorkflowEvent } from '../src/workflows/domain/workflow.events.js';

/** A value `detail` may hold: never an object or an array, so nothing nested can ride along. */
export type AuditScalar = string | number | boolean;
export type AuditDetail = Readonly<Record<string, AuditScalar>>;

/** Longer strings are left out of `detail`: ids, codes and digests are short, free text is not. */
export const MAX_DETAIL_STRING = 256;

/**
 * What the audit trail shows of each known action, beyond who did it and when: the fields of
 * its payload it copies, as `{ shownAs: 'path.in.payload' }`. Only ids, numbers, codes, enums,
 * digests and deadlines are listed; never inputs, outputs, actions awaiting approval, graphs
 * (their headers), error messages, reasons or comments. An action without an entry shows `{}`.
 * Paths read the payload as its stream kind's parser returns it (upcast to the current shape).
 */
export const AUDIT_DETAIL_FIELDS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  WorkflowRevisionPublished: { revision: 'revision', digest: 'digest' },
  ExecutionStarted: { workflowRevision: 'workflow.revision' },
  AttemptScheduled: { attemptId: 'attemptId', attemptNumber: 'attemptNumber', reason: 'reason' },
  AttemptClaimed: { attemptId: 'attemptId', workerId: 'workerId', fencingToken: 'fencingToken' },
  LeaseExtended: { attemptId: 'attemptId' },
  NodeStarted: { attemptId: 'attemptId', nodeId: 'nodeId' },
  NodeSucceeded: { attemptId: 'attemptId', nodeId: 'nodeId' },
  NodeFailed: { attemptId: 'attemptId', nodeId: 'nodeId', errorCode: 'error.code' },
  NodeSkipped: { attemptId: 'attemptId', nodeId: 'nodeId' },
  NodeAwaitingApproval: { attemptId: 'attemptId', nodeId: 'nodeId', actionDigest: 'actionDigest' },
  MapItemsStarted: { attemptId: 'attemptId', nodeId: 'nodeId' },
  MapItemsCompleted: { attemptId: 'attemptId', nodeId: 'nodeId' },
  MapItemsFailed: { attemptId: 'attemptId', nodeId: 'nodeId', errorCode: 'items.0.error.code' },
  // The first node it waits for: the approval node, as before waits were a list.
  AttemptSuspended: { attemptId: 'attemptId', nodeId: 'waits.0.nodeId' },
  TaskScheduled: { taskId: 'taskId', nodeId: 'nodeId', queue: 'queue', taskAttempt: 'taskAttempt' },
  TaskClaimed: { taskId: 'taskId', workerId: 'workerId', fencingToken: 'fencingToken' },
  TaskLeaseExtended: { taskId: 'taskId' },
  TaskSucceeded: { taskId: 'taskId' },
  TaskFailed: { taskId: 'taskId', errorCode: 'error.code' },
  TaskTimedOut: { taskId: 'taskId', reason: 'reason', deadline: 'deadline' },
  TaskCancelled: { taskId: 'taskId' },
  ChildExecutionStarted: { nodeId: 'nodeId', childExecutionId: 'childExecutionId', workflow: 'workflow', depth: 'depth' },
  ChildExecutionEnded: { nodeId: 'nodeId', childExecutionId: 'childExecutionId', status: 'status' },
  TimerScheduled: { timerId: 'timerId', nodeId: 'nodeId', purpose: 'purpose', dueAt: 'dueAt' },
  TimerFired: { timerId: 'timerId', nodeId: 'nodeId', lateByMs: 'lateByMs' },
  TimerCancelled: { timerId: 'timerId' },
  SignalReceived: { signalId: 'signalId', name: 'name' },
  SignalAwaited: { nodeId: 'nodeId', name: 'name', tries: 'tries' },
  SignalDelivered: { signalId: 'signalId', nodeId: 'nodeId' },
  SignalWaitCancelled: { nodeId: 'nodeId' },
  ApprovalGranted: { nodeId: 'nodeId', actionDigest: 'actionDigest' },
  ApprovalRejected: { nodeId: 'nodeId', actionDigest: 'actionDigest' },
  AttemptSucceeded: { attemptId: 'attemptId' },
  AttemptFailed: { attemptId: 'attemptId', errorCode: 'error.code' },
  AttemptTimedOut: { attemptId: 'attemptId', reason: 'reason', deadline: 'deadline' },
  AttemptCancelled: { attemptId: 'attemptId' },
  CancelRequested: {},
  RedriveRequested: { redriveId: 'redriveId', attemptId: 'attemptId', attemptNumber: 'attemptNumber' },
  ExecutionSucceeded: {},
  ExecutionFailed: { errorCode: 'error.code' },
  ExecutionTimedOut: {},
  ExecutionCancelled: {},
  // Secrets streams: which secret, which version; never its value (events carry none) nor where it is kept.
  SecretPut: { name: 'name', version: 'version' },
  SecretDeleted: { name: 'name', version: 'version' },
};

/** The small summary of an action: the whitelisted scalar fields of its payload, nothing else. */
export function auditDetailOf(action: string, data: unknown): AuditDetail {
  const fields = Object.hasOwn(AUDIT_DETAIL_FIELDS, action) ? AUDIT_DETAIL_FIELDS[action] : undefined;
  const detail: Record<string, AuditScalar> = {};
  if (fields === undefined) return detail;
  for (const [shownAs, path] of Object.entries(fields)) {
    const value = valueAt(data, path);
    if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) detail[shownAs] = value;
    else if (typeof value === 'string' && value.length <= MAX_DETAIL_STRING) detail[shownAs] = value;
  }
  return detail;
}

function valueAt(data: unknown, path: string): unknown {
  let value = data;
  for (const key of path.split('.')) {
    // An array is entered by index only (`waits.0.nodeId`); its length or methods never.
    if (Array.isArray(value) && !/^(0|[1-9][0-9]*)$/.test(key)) return undefined;
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * Where the payload of an action recorded before events carried `metadata.actor` says who did
 * it: a person's subject, or a worker's id.
 */
const ACTOR_IN_PAYLOAD: Readonly<Record<string, { field: string; worker?: true }>> = {
  WorkflowRevisionPublished: { field: 'publishedBy' },
  ExecutionStarted: { field: 'startedBy' },
  CancelRequested: { field: 'requestedBy' },
  RedriveRequested: { field: 'requestedBy' },
  ApprovalGranted: { field: 'decidedBy' },
  ApprovalRejected: { field: 'decidedBy' },
  AttemptClaimed: { field: 'workerId', worker: true },
};

/** The actor of an event: its metadata's, else what its payload says, else `unknown`. */
export function auditActorOf(action: string, data: unknown, metadataActor: string | undefined): string {
  if (metadataActor !== undefined) return metadataActor;
  const source = Object.hasOwn(ACTOR_IN_PAYLOAD, action) ? ACTOR_IN_PAYLOAD[action] : undefined;
  const named = source === undefined ? undefined : valueAt(data, source.field);
  if (typeof named !== 'string' || named === '') return UNKNOWN_ACTOR;
  return source?.worker ? workerActor(named) : named;
}

/** The metadata the audit trail reads; a field of the wrong shape counts as absent. */
const auditMetadataSchema = z.object({
  actor: z.string().min(1).max(512).optional().catch(undefined),
  workspaceId: z.string().regex(IDENTIFIER_PATTERN).optional().catch(undefined),
  executionId: z.string().regex(UUID_PATTERN).optional().catch(undefined),
});

/** The projected event type: one for every action, whose own type travels as `action`. */
export const AUDITED = 'Audited';

/** One event of the log as the audit trail receives it: decoded, attributed where it says, summarized. */
export interface AuditedEvent {
  readonly type: typeof AUDITED;
  readonly position: Position;
  readonly recordedAt: string;
  /** The event's type. */
  readonly action: string;
  readonly actor: string;
  /** The owning workspace; null for an execution event that does not say, whose start does. */
  readonly workspaceId: string | null;
  readonly executionId: string | null;
  /** The workflow's name, where the event says it; an execution's comes from its start. */
  readonly workflow: string | null;
  readonly detail: AuditDetail;
  /** For ExecutionStarted: what the events after it inherit when they do not say. */
  readonly starts: { readonly workspaceId: string; readonly workflow: string } | null;
}

const EXECUTION_PREFIX = executionStreamId('');
const WORKFLOW_PREFIX = 'workflow-';

/**
 * An event of the log as an audit entry, or null when it is no audit matter. Execution and
 * workflow events are always audited (validated by their own parsers, which stop the reader
 * loudly on a corrupt event); an event of any other stream is audited when its metadata names
 * both its actor and its workspace.
 */
export function toAuditedEvent(recorded: RecordedEvent): AuditedEvent | null {
  const metadata = auditMetadataSchema.parse(recorded.metadata);
  const base: Pick<AuditedEvent, 'type' | 'position' | 'recordedAt' | 'action'> = {
    type: AUDITED,
    position: recorded.position,
    recordedAt: recorded.recordedAt,
    action: recorded.type,
  };
  if (recorded.streamId.startsWith(EXECUTION_PREFIX)) {
    const event = parseExecutionEvent(recorded);
    const starts = event.type === 'ExecutionStarted' ? { workspaceId: event.data.workspaceId, workflow: event.data.workflow.name } : null;
    return {
      ...base,
      actor: auditActorOf(event.type, event.data, metadata.actor),
      workspaceId: metadata.workspaceId ?? starts?.workspaceId ?? null,
      executionId: recorded.streamId.slice(EXECUTION_PREFIX.length),
      workflow: starts?.workflow ?? null,
      detail: auditDetailOf(event.type, event.data),
      starts,
    };
  }
  if (recorded.streamId.startsWith(WORKFLOW_PREFIX)) {
    const event = parseWorkflowEvent(recorded);
    return {
      ...base,
      actor: auditActorOf(event.type, event.data, metadata.actor),
      workspaceId: metadata.workspaceId ?? event.data.workspaceId,
      executionId: null,
      workflow: event.data.name,
      detail: auditDetailOf(event.type, event.data),
      starts: null,
    };
  }
  if (metadata.actor === undefined || metadata.workspaceId === undefined) return null;
  return {
    ...base,
    actor: metadata.actor,
    workspaceId: metadata.workspaceId,
    executionId: metadata.executionId ?? null,
    workflow: null,
    detail: auditDetailOf(recorded.type, recorded.data),
    starts: null,
  };
}

/** Decoded once per recorded event: runners at the head of the log share the recorded objects. */
const decoded = new WeakMap<RecordedEvent, AuditedEvent | null>();

/** Every event of the log that says (or whose stream says) who did what in which workspace. */
export const auditedEvents: ProjectionSource<AuditedEvent> = {
  decode(recorded) {
    const known = decoded.get(recorded);
    if (known !== undefined) return known;
    const event = toAuditedEvent(recorded);
    decoded.set(recorded, event);
    return event;
  },
};
