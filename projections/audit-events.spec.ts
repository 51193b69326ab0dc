import { describe, expect, it } from '@jest/globals';
import type { RecordedEvent } from '../src/core/event-store.port.js';
import { UnreadableEventError } from '../src/executions/domain/execution-event.parser.js';
import type { ExecutionEvent, ExecutionEventOf } from '../src/executions/domain/execution.events.js';
import { workflowGraphDigest } from '../src/workflows/domain/workflow-digest.js';
import { parseWorkflowDefinition } from '../src/workflows/domain/workflow-graph.validation.js';
import { workflowIdOf, workflowStreamId } from '../src/workflows/domain/workflow-identity.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  EXECUTION_ID,
  OPERATOR,
  REDRIVE_1,
  WORKER_A,
  WORKSPACE_ID,
  aWorkflow,
  attemptCancelled,
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  attemptSucceeded,
  attemptTimedOut,
  executionCancelled,
  executionFailed,
  executionStarted,
  executionSucceeded,
  iso,
  leaseExtended,
  nodeFailed,
  nodeSkipped,
  nodeStarted,
  nodeSucceeded,
  redriveRequested,
} from '../test/support/executions/execution-fixtures.js';
import { MAX_DETAIL_STRING, auditActorOf, auditDetailOf, toAuditedEvent } from './audit-events.js';

/** Planted in every free-form field: inputs, outputs, actions, graphs, messages, reasons, comments. */
const MARK = 'audit-marker-7f3c1d';

const json = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

let seq = 0;
function recorded(
  event: { type: string; data: unknown },
  o: { streamId?: string; metadata?: Record<string, unknown> } = {},
): RecordedEvent {
  seq += 1;
  return {
    id: `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`,
    type: event.type,
    streamId: o.streamId ?? `execution-${EXECUTION_ID}`,
    revision: 0,
    position: `p${String(seq).padStart(10, '0')}`,
    data: json(event.data),
    metadata: o.metadata ?? { schemaVersion: 2, actor: OPERATOR, workspaceId: WORKSPACE_ID, executionId: EXECUTION_ID },
    recordedAt: '2030-01-01T00:00:09.000Z',
  };
}

const withHeaders = () => {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [
        { id: 'extract', type: 'http', config: { method: 'GET', url: 'https://example.test/', headers: { Authorization: MARK } } },
        { id: 'load', type: 'approval', config: { action: { pay: MARK } } },
      ],
    },
  };
};

/** One event of every execution type, each with the marker wherever its payload has free text. */
const markedExecutionEvents = (): ExecutionEvent[] => {
  const started = executionStarted({ workflow: withHeaders() }) as ExecutionEventOf<'ExecutionStarted'>;
  const approval = { nodeId: 'load', actionDigest: 'a'.repeat(64), decidedBy: 'cfo', comment: MARK, at: iso(9_000) };
  return [
    { type: 'ExecutionStarted', data: { ...started.data, input: { secret: MARK } } },
    attemptScheduled(),
    attemptClaimed({ at: 1_000 }),
    leaseExtended({ at: 2_000 }),
    nodeStarted({ nodeId: 'extract', at: 3_000 }),
    nodeSucceeded({ nodeId: 'extract', at: 3_000, output: { body: MARK } }),
    nodeFailed({ nodeId: 'extract', at: 3_000, error: { code: 'http_500', message: MARK } }),
    nodeSkipped({ nodeId: 'extract', at: 3_000, reason: MARK }),
    { type: 'MapItemsStarted', data: { attemptId: ATTEMPT_1, nodeId: 'each', indexes: [0, 1], at: iso(3_000) } },
    { type: 'MapItemsCompleted', data: { attemptId: ATTEMPT_1, nodeId: 'each', items: [{ index: 0, output: MARK }], at: iso(3_000) } },
    {
      type: 'MapItemsFailed',
      data: { attemptId: ATTEMPT_1, nodeId: 'each', items: [{ index: 1, error: { code: 'http_500', message: MARK } }], at: iso(3_000) },
    },
    {
      type: 'NodeAwaitingApproval',
      data: { attemptId: ATTEMPT_1, nodeId: 'load', action: { pay: MARK }, actionDigest: 'a'.repeat(64), at: iso(4_000) },
    },
    { type: 'AttemptSuspended', data: { attemptId: ATTEMPT_1, waits: [{ nodeId: 'load', kind: 'approval' }], at: iso(4_000) } },
    { type: 'ApprovalGranted', data: approval },
    { type: 'ApprovalRejected', data: approval },
    attemptSucceeded({ at: 5_000, output: { total: MARK } }),
    attemptFailed({ at: 5_000, error: { code: 'boom', message: MARK } }),
    attemptTimedOut({ at: 5_000, reason: 'lease_expired', deadline: 4_000 }),
    attemptCancelled({ at: 5_000 }),
    { type: 'CancelRequested', data: { reason: MARK, requestedBy: OPERATOR, at: iso(6_000) } },
    redriveRequested({ at: 7_000, attemptNumber: 2, idempotencyKey: MARK }),
    executionSucceeded({ at: 8_000, output: { total: MARK } }),
    executionFailed({ at: 8_000, error: { code: 'boom', message: MARK } }),
    { type: 'ExecutionTimedOut', data: { reason: MARK, at: iso(8_000) } },
    executionCancelled({ at: 8_000, reason: MARK }),
  ];
};

function publishedRevision() {
  const parsed = parseWorkflowDefinition({
    nodes: [
      { id: 'call', type: 'http', config: { method: 'POST', url: 'https://example.test/', headers: { 'X-Api-Key': MARK }, body: MARK } },
    ],
  });
  if (!parsed.ok) throw new Error('fixture graph is invalid');
  return {
    type: 'WorkflowRevisionPublished',
    data: {
      workflowId: workflowIdOf('acme', 'orders'),
      workspaceId: 'acme',
      name: 'orders',
      revision: 3,
      digest: workflowGraphDigest(parsed.graph),
      graph: parsed.graph,
      publishedBy: 'eve',
      publishedAt: '2030-01-02T03:04:05.000Z',
    },
  };
}

describe('the detail of an audit entry', () => {
  it('shows the whitelisted ids, numbers and codes of each action', () => {
    const details = Object.fromEntries(markedExecutionEvents().map((e) => [e.type, auditDetailOf(e.type, json(e.data))]));
    expect(details).toEqual({
      ExecutionStarted: { workflowRevision: 1 },
      AttemptScheduled: { attemptId: ATTEMPT_1, attemptNumber: 1, reason: 'start' },
      AttemptClaimed: { attemptId: ATTEMPT_1, workerId: WORKER_A, fencingToken: 1 },
      LeaseExtended: { attemptId: ATTEMPT_1 },
      NodeStarted: { attemptId: ATTEMPT_1, nodeId: 'extract' },
      NodeSucceeded: { attemptId: ATTEMPT_1, nodeId: 'extract' },
      NodeFailed: { attemptId: ATTEMPT_1, nodeId: 'extract', errorCode: 'http_500' },
      NodeSkipped: { attemptId: ATTEMPT_1, nodeId: 'extract' },
      MapItemsStarted: { attemptId: ATTEMPT_1, nodeId: 'each' },
      MapItemsCompleted: { attemptId: ATTEMPT_1, nodeId: 'each' },
      MapItemsFailed: { attemptId: ATTEMPT_1, nodeId: 'each', errorCode: 'http_500' },
      NodeAwaitingApproval: { attemptId: ATTEMPT_1, nodeId: 'load', actionDigest: 'a'.repeat(64) },
      AttemptSuspended: { attemptId: ATTEMPT_1, nodeId: 'load' },
      ApprovalGranted: { nodeId: 'load', actionDigest: 'a'.repeat(64) },
      ApprovalRejected: { nodeId: 'load', actionDigest: 'a'.repeat(64) },
      AttemptSucceeded: { attemptId: ATTEMPT_1 },
      AttemptFailed: { attemptId: ATTEMPT_1, errorCode: 'boom' },
      AttemptTimedOut: { attemptId: ATTEMPT_1, reason: 'lease_expired', deadline: iso(4_000) },
      AttemptCancelled: { attemptId: ATTEMPT_1 },
      CancelRequested: {},
      RedriveRequested: { redriveId: REDRIVE_1, attemptId: ATTEMPT_2, attemptNumber: 2 },
      ExecutionSucceeded: {},
      ExecutionFailed: { errorCode: 'boom' },
      ExecutionTimedOut: {},
      ExecutionCancelled: {},
    });
  });

  it('never carries an input, an output, an action, a graph, a message, a reason or a comment', () => {
    for (const event of markedExecutionEvents()) {
      expect(JSON.stringify(toAuditedEvent(recorded(event)))).not.toContain(MARK);
    }
    const published = toAuditedEvent(recorded(publishedRevision(), { streamId: workflowStreamId('acme', 'orders'), metadata: {} }));
    expect(published?.detail).toEqual({ revision: 3, digest: publishedRevision().data.digest });
    expect(JSON.stringify(published)).not.toContain(MARK);
  });

  it('shows which secret was stored or deleted, never where its value is kept', () => {
    const put = { name: 'db-password', version: 3, valueId: '0b8f4e0a-1c2d-4e5f-8a9b-0000000e0001', updatedAt: iso(0) };
    expect(auditDetailOf('SecretPut', put)).toEqual({ name: 'db-password', version: 3 });
    expect(auditDetailOf('SecretDeleted', { ...put, deletedAt: iso(0) })).toEqual({ name: 'db-password', version: 3 });
  });

  it('shows nothing of an action it has no entry for, whatever its payload', () => {
    expect(auditDetailOf('SecretValueSet', { name: 'db-password', value: MARK })).toEqual({});
    expect(auditDetailOf('toString', { value: MARK })).toEqual({});
  });

  it('leaves out a whitelisted field that holds an object, an array or a long string', () => {
    expect(auditDetailOf('AttemptClaimed', { attemptId: { nested: MARK }, workerId: [MARK], fencingToken: 2 })).toEqual({
      fencingToken: 2,
    });
    expect(auditDetailOf('NodeFailed', { nodeId: 'x'.repeat(MAX_DETAIL_STRING + 1), error: { code: 'e' } })).toEqual({ errorCode: 'e' });
    expect(auditDetailOf('NodeFailed', { error: null, nodeId: 'n' })).toEqual({ nodeId: 'n' });
  });
});

describe('the actor of an audit entry', () => {
  it('is the one the metadata names, whatever the payload says', () => {
    expect(auditActorOf('ExecutionStarted', { startedBy: 'oscar' }, 'alice')).toBe('alice');
    expect(auditActorOf('AttemptTimedOut', {}, 'system:watchdog')).toBe('system:watchdog');
  });

  it('is derived from the payload of an event recorded without one', () => {
    expect(auditActorOf('ExecutionStarted', { startedBy: 'oscar' }, undefined)).toBe('oscar');
    expect(auditActorOf('CancelRequested', { requestedBy: 'oscar' }, undefined)).toBe('oscar');
    expect(auditActorOf('RedriveRequested', { requestedBy: 'alice' }, undefined)).toBe('alice');
    expect(auditActorOf('ApprovalGranted', { decidedBy: 'cfo' }, undefined)).toBe('cfo');
    expect(auditActorOf('ApprovalRejected', { decidedBy: 'cfo' }, undefined)).toBe('cfo');
    expect(auditActorOf('WorkflowRevisionPublished', { publishedBy: 'eve' }, undefined)).toBe('eve');
    expect(auditActorOf('AttemptClaimed', { workerId: 'w-7' }, undefined)).toBe('worker:w-7');
  });

  it('is unknown when neither the metadata nor the payload names one', () => {
    for (const action of ['LeaseExtended', 'NodeSucceeded', 'AttemptTimedOut', 'AttemptScheduled', 'SomethingNew']) {
      expect(auditActorOf(action, { attemptId: ATTEMPT_1 }, undefined)).toBe('unknown');
    }
    expect(auditActorOf('ExecutionStarted', { startedBy: '' }, undefined)).toBe('unknown');
    expect(auditActorOf('CancelRequested', { requestedBy: 42 }, undefined)).toBe('unknown');
  });
});

describe('an event of the log as the audit trail reads it', () => {
  it('files an execution event under the workspace, execution and actor its metadata names', () => {
    const claimed = attemptClaimed({ at: 1_000 });
    expect(
      toAuditedEvent(
        recorded(claimed, {
          metadata: { schemaVersion: 2, actor: 'worker:worker-a', workspaceId: WORKSPACE_ID, executionId: EXECUTION_ID },
        }),
      ),
    ).toMatchObject({
      type: 'Audited',
      action: 'AttemptClaimed',
      actor: 'worker:worker-a',
      workspaceId: WORKSPACE_ID,
      executionId: EXECUTION_ID,
      workflow: null,
      starts: null,
      recordedAt: '2030-01-01T00:00:09.000Z',
    });
  });

  it('takes the owner of an execution from its start, for the events that do not name it', () => {
    const start = toAuditedEvent(recorded(executionStarted(), { metadata: { schemaVersion: 2 } }));
    expect(start).toMatchObject({ actor: OPERATOR, workspaceId: WORKSPACE_ID, workflow: 'nightly-export' });
    expect(start?.starts).toEqual({ workspaceId: WORKSPACE_ID, workflow: 'nightly-export' });
    const later = toAuditedEvent(recorded(leaseExtended({ at: 2_000 }), { metadata: { schemaVersion: 2 } }));
    expect(later).toMatchObject({ actor: 'unknown', workspaceId: null, executionId: EXECUTION_ID });
  });

  it('reads a workflow revision published before metadata named its actor and workspace', () => {
    const event = toAuditedEvent(
      recorded(publishedRevision(), { streamId: workflowStreamId('acme', 'orders'), metadata: { schemaVersion: 1 } }),
    );
    expect(event).toMatchObject({
      action: 'WorkflowRevisionPublished',
      actor: 'eve',
      workspaceId: 'acme',
      workflow: 'orders',
      executionId: null,
    });
  });

  it('audits an event of any other stream whose metadata names its actor and workspace, with no detail', () => {
    const secret = { type: 'SecretValueSet', data: { name: 'db-password', value: MARK } };
    const event = toAuditedEvent(recorded(secret, { streamId: 'secrets-acme', metadata: { actor: 'alice', workspaceId: 'acme' } }));
    expect(event).toMatchObject({ action: 'SecretValueSet', actor: 'alice', workspaceId: 'acme', executionId: null, detail: {} });
    expect(JSON.stringify(event)).not.toContain(MARK);
    const admitted = toAuditedEvent(
      recorded(
        { type: 'SlotTaken', data: {} },
        { streamId: 'quota-acme', metadata: { actor: 'system:admission', workspaceId: 'acme', executionId: EXECUTION_ID } },
      ),
    );
    expect(admitted).toMatchObject({ actor: 'system:admission', executionId: EXECUTION_ID });
  });

  it('leaves out an event of another stream that does not name both, or names them wrongly', () => {
    for (const metadata of [
      { actor: 'alice' },
      { workspaceId: 'acme' },
      {},
      { actor: 'alice', workspaceId: 'not a workspace!' },
      { actor: 7, workspaceId: 'acme' },
    ]) {
      expect(toAuditedEvent(recorded({ type: 'Anything', data: {} }, { streamId: 'other-1', metadata }))).toBeNull();
    }
  });

  it('stops on an execution event that does not parse, rather than skip it', () => {
    expect(() => toAuditedEvent(recorded({ type: 'AttemptClaimed', data: { attemptId: 3 } }))).toThrow(UnreadableEventError);
  });
});
