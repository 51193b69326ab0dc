import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ExecutionEvent } from '../src/executions/domain/execution.events.js';
import { PgliteSqlClient } from '../src/postgres/pglite-sql-client.js';
import { workflowGraphDigest } from '../src/workflows/domain/workflow-digest.js';
import { parseWorkflowDefinition } from '../src/workflows/domain/workflow-graph.validation.js';
import { workflowIdOf, workflowStreamId } from '../src/workflows/domain/workflow-identity.js';
import {
  ATTEMPT_1,
  EXECUTION_ID,
  OPERATOR,
  WORKER_A,
  WORKSPACE_ID,
  attemptClaimed,
  attemptScheduled,
  attemptTimedOut,
  cancelRequested,
  executionStarted,
  executionTimedOut,
  iso,
  leaseExtended,
} from '../test/support/executions/execution-fixtures.js';
import { type GivenRecordedEvent, position, recordedProjectionSpecification } from '../test/support/projector/projection-specification.js';
import { EXECUTIONS_EXPIRED, RETENTION_STREAM } from '../src/core/retention.js';
import { UnattributedAuditEventError, auditProjection } from './audit.projection.js';

const OTHER_EXECUTION = '0b8f4e0a-1c2d-4e5f-8a9b-000000000002';
const OTHER_WORKSPACE = 'ws-other';
const STREAM = `execution-${EXECUTION_ID}`;
const recordedAt = (n: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, n - 1)).toISOString();

/** An execution event as this release records it: actor, workspace and execution in the metadata. */
const now = (event: ExecutionEvent, actor: string, o: { executionId?: string; workspaceId?: string } = {}): GivenRecordedEvent => ({
  streamId: `execution-${o.executionId ?? EXECUTION_ID}`,
  ...event,
  metadata: { schemaVersion: 2, actor, workspaceId: o.workspaceId ?? WORKSPACE_ID, executionId: o.executionId ?? EXECUTION_ID },
});

/** An execution event as an earlier release recorded it: only its schema version in the metadata. */
const earlier = (event: ExecutionEvent): GivenRecordedEvent => ({ streamId: STREAM, ...event, metadata: { schemaVersion: 2 } });

function published(o: { workspaceId: string; name: string; by: string }, metadata: Record<string, unknown>): GivenRecordedEvent {
  const parsed = parseWorkflowDefinition({ nodes: [{ id: 'a', type: 'noop' }] });
  if (!parsed.ok) throw new Error('fixture graph is invalid');
  return {
    streamId: workflowStreamId(o.workspaceId, o.name),
    type: 'WorkflowRevisionPublished',
    data: {
      workflowId: workflowIdOf(o.workspaceId, o.name),
      workspaceId: o.workspaceId,
      name: o.name,
      revision: 1,
      digest: workflowGraphDigest(parsed.graph),
      graph: parsed.graph,
      publishedBy: o.by,
      publishedAt: iso(0),
    },
    metadata,
  };
}

function row(
  n: number,
  o: {
    actor: string;
    action: string;
    detail: Record<string, unknown>;
    workspace?: string;
    execution?: string | null;
    workflow?: string | null;
  },
) {
  return {
    position: position(n),
    workspace_id: o.workspace ?? WORKSPACE_ID,
    recorded_at: recordedAt(n),
    actor: o.actor,
    action: o.action,
    execution_id: o.execution === undefined ? EXECUTION_ID : o.execution,
    workflow: o.workflow === undefined ? 'nightly-export' : o.workflow,
    detail: o.detail,
  };
}

describe('the audit projection', () => {
  let db: PgliteSqlClient;
  const spec = recordedProjectionSpecification(auditProjection, () => db);

  beforeAll(async () => {
    db = await PgliteSqlClient.open();
  });
  afterAll(() => db?.close());

  describe('when an execution runs', () => {
    it('keeps each event with the actor its metadata names, and the execution’s workflow from its start', async () => {
      await spec
        .given([
          now(executionStarted(), OPERATOR),
          now(attemptScheduled(), OPERATOR),
          now(attemptClaimed({ at: 1_000 }), `worker:${WORKER_A}`),
          now(leaseExtended({ at: 2_000 }), `worker:${WORKER_A}`),
          now(attemptTimedOut({ at: 40_000, reason: 'lease_expired', deadline: 32_000 }), 'system:watchdog'),
          now(executionTimedOut({ at: 40_000 }), 'system:watchdog'),
        ])
        .then({
          audit: [
            row(1, { actor: OPERATOR, action: 'ExecutionStarted', detail: { workflowRevision: 1 } }),
            row(2, { actor: OPERATOR, action: 'AttemptScheduled', detail: { attemptId: ATTEMPT_1, attemptNumber: 1, reason: 'start' } }),
            row(3, {
              actor: 'worker:worker-a',
              action: 'AttemptClaimed',
              detail: { attemptId: ATTEMPT_1, workerId: WORKER_A, fencingToken: 1 },
            }),
            row(4, { actor: 'worker:worker-a', action: 'LeaseExtended', detail: { attemptId: ATTEMPT_1 } }),
            row(5, {
              actor: 'system:watchdog',
              action: 'AttemptTimedOut',
              detail: { attemptId: ATTEMPT_1, reason: 'lease_expired', deadline: iso(32_000) },
            }),
            row(6, { actor: 'system:watchdog', action: 'ExecutionTimedOut', detail: {} }),
          ],
          audit_executions: [{ execution_id: EXECUTION_ID, workspace_id: WORKSPACE_ID, workflow: 'nightly-export' }],
        });
    });
  });

  describe('when events were recorded before they carried an actor and a workspace', () => {
    it('derives the actor from the payload where it says, files them under the execution’s start, else shows unknown', async () => {
      const rows = await spec
        .given([
          earlier(executionStarted()),
          earlier(attemptScheduled()),
          earlier(attemptClaimed({ at: 1_000 })),
          earlier(leaseExtended({ at: 2_000 })),
          earlier(cancelRequested({ at: 3_000 })),
        ])
        .rows();
      expect(rows.audit.map((r) => [r.position, r.workspace_id, r.workflow, r.action, r.actor])).toEqual([
        [position(1), WORKSPACE_ID, 'nightly-export', 'ExecutionStarted', OPERATOR],
        [position(2), WORKSPACE_ID, 'nightly-export', 'AttemptScheduled', 'unknown'],
        [position(3), WORKSPACE_ID, 'nightly-export', 'AttemptClaimed', 'worker:worker-a'],
        [position(4), WORKSPACE_ID, 'nightly-export', 'LeaseExtended', 'unknown'],
        [position(5), WORKSPACE_ID, 'nightly-export', 'CancelRequested', OPERATOR],
      ]);
    });

    it('refuses an execution event that names no workspace of an execution it never saw start', async () => {
      await expect(spec.given([earlier(attemptScheduled())]).rows()).rejects.toThrow(UnattributedAuditEventError);
    });
  });

  describe('when executions of two workspaces interleave', () => {
    it('files each event under its own execution’s workspace', async () => {
      const started = executionStarted();
      const other = {
        ...started,
        data: { ...(started.data as object), executionId: OTHER_EXECUTION, workspaceId: OTHER_WORKSPACE },
      } as ExecutionEvent;
      const rows = await spec
        .given([
          now(started, OPERATOR),
          now(other, 'bob', { executionId: OTHER_EXECUTION, workspaceId: OTHER_WORKSPACE }),
          now(attemptScheduled(), OPERATOR),
          { ...earlier(attemptScheduled()), streamId: `execution-${OTHER_EXECUTION}` },
        ])
        .rows();
      expect(rows.audit.map((r) => [r.position, r.execution_id, r.workspace_id, r.actor])).toEqual([
        [position(1), EXECUTION_ID, WORKSPACE_ID, OPERATOR],
        [position(2), OTHER_EXECUTION, OTHER_WORKSPACE, 'bob'],
        [position(3), EXECUTION_ID, WORKSPACE_ID, OPERATOR],
        [position(4), OTHER_EXECUTION, OTHER_WORKSPACE, 'unknown'],
      ]);
    });
  });

  describe('when retention expires executions', () => {
    it('drops their rows, and every row recorded before its horizon, of executions or not', async () => {
      const other = { executionId: OTHER_EXECUTION };
      await spec
        .given([
          now(executionStarted(), OPERATOR),
          published(
            { workspaceId: WORKSPACE_ID, name: 'orders', by: 'eve' },
            { schemaVersion: 1, actor: 'eve', workspaceId: WORKSPACE_ID },
          ),
          now(executionStarted(), OPERATOR, other),
          now(attemptScheduled(), OPERATOR, other),
          now(attemptScheduled(), OPERATOR),
          {
            streamId: RETENTION_STREAM,
            type: EXECUTIONS_EXPIRED,
            data: { executionIds: [EXECUTION_ID], before: recordedAt(4), prunedThrough: position(5) },
            metadata: { actor: 'system:retention' },
          },
          now(cancelRequested({ at: 9_000 }), OPERATOR, other),
        ])
        .then({
          audit: [
            row(4, {
              actor: OPERATOR,
              action: 'AttemptScheduled',
              execution: OTHER_EXECUTION,
              detail: { attemptId: ATTEMPT_1, attemptNumber: 1, reason: 'start' },
            }),
            row(7, { actor: OPERATOR, action: 'CancelRequested', execution: OTHER_EXECUTION, detail: {} }),
          ],
          audit_executions: [{ execution_id: OTHER_EXECUTION, workspace_id: WORKSPACE_ID, workflow: 'nightly-export' }],
        });
    });
  });

  describe('when the log holds events of other streams', () => {
    it('keeps workflow revisions, and any event whose metadata names its actor and workspace', async () => {
      const rows = await spec
        .given([
          published({ workspaceId: 'acme', name: 'orders', by: 'eve' }, { schemaVersion: 1, actor: 'eve', workspaceId: 'acme' }),
          published({ workspaceId: 'acme', name: 'refunds', by: 'eve' }, { schemaVersion: 1 }),
          {
            streamId: 'secrets-acme',
            type: 'SecretValueSet',
            data: { name: 'db', value: 'hunter2' },
            metadata: { actor: 'alice', workspaceId: 'acme' },
          },
          { streamId: 'secrets-acme', type: 'SecretValueSet', data: { name: 'db', value: 'hunter2' }, metadata: { actor: 'alice' } },
          now(executionStarted(), OPERATOR),
          {
            streamId: `quota-${WORKSPACE_ID}`,
            type: 'SlotTaken',
            data: {},
            metadata: { actor: 'system:admission', workspaceId: WORKSPACE_ID, executionId: EXECUTION_ID },
          },
        ])
        .rows();
      expect(rows.audit.map((r) => [r.position, r.workspace_id, r.actor, r.action, r.execution_id, r.workflow, r.detail])).toEqual([
        [position(1), 'acme', 'eve', 'WorkflowRevisionPublished', null, 'orders', { revision: 1, digest: expect.any(String) }],
        [position(2), 'acme', 'eve', 'WorkflowRevisionPublished', null, 'refunds', { revision: 1, digest: expect.any(String) }],
        [position(3), 'acme', 'alice', 'SecretValueSet', null, null, {}],
        [position(5), WORKSPACE_ID, OPERATOR, 'ExecutionStarted', EXECUTION_ID, 'nightly-export', { workflowRevision: 1 }],
        [position(6), WORKSPACE_ID, 'system:admission', 'SlotTaken', EXECUTION_ID, 'nightly-export', {}],
      ]);
    });
  });
});
