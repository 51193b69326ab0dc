import { describe, expect, it } from '@jest/globals';
import { ApprovalMismatchError, type DomainError, InvalidStateError } from '../../core/errors.js';
import type { DecideApproval } from './execution.commands.js';
import type { ExecutionEvent, WorkflowSnapshot } from './execution.events.js';
import { NotAnApproverError, actionDigestOf } from './decide-approval.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  OPERATOR,
  aWorkflow,
  attemptClaimed,
  attemptScheduled,
  completeAttempt,
  executionStarted,
  given,
  iso,
  requestCancel,
  time,
} from '../../../test/support/executions/execution-fixtures.js';

const ACTION = { publish: 'report-v7', recipients: ['cfo@example.test'] };
const DIGEST = actionDigestOf(ACTION);

function withApproval(config?: Record<string, unknown>): WorkflowSnapshot {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [...base.graph.nodes, { id: 'sign-off', type: 'approval', ...(config ? { config } : {}) }],
      edges: [...base.graph.edges, { from: 'load', to: 'sign-off' }],
    },
  };
}

const running = (config?: Record<string, unknown>): ExecutionEvent[] => [
  executionStarted({ workflow: withApproval(config) }),
  attemptScheduled({ at: 0 }),
  attemptClaimed({ at: 1_000 }),
];

const suspended = (config?: Record<string, unknown>): ExecutionEvent[] => [
  ...running(config),
  {
    type: 'NodeAwaitingApproval',
    data: { attemptId: ATTEMPT_1, nodeId: 'sign-off', action: ACTION, actionDigest: DIGEST, at: iso(5_000) },
  },
  { type: 'AttemptSuspended', data: { attemptId: ATTEMPT_1, waits: [{ nodeId: 'sign-off', kind: 'approval' }], at: iso(5_000) } },
];

function decide(o: { decision: 'approve' | 'reject'; actionDigest?: string; at: number; nodeId?: string; by?: string }): DecideApproval {
  return {
    type: 'DecideApproval',
    data: {
      nodeId: o.nodeId ?? 'sign-off',
      decision: o.decision,
      actionDigest: o.actionDigest ?? DIGEST,
      comment: null,
      attemptId: ATTEMPT_2,
    },
    metadata: { now: time(o.at), actor: o.by ?? OPERATOR },
  };
}

describe('approvals bound to an action', () => {
  describe('when the worker reaches an approval node', () => {
    it('records the pending action with its digest and suspends the attempt, freeing the worker', () => {
      const command = completeAttempt({ at: 5_000, outcome: 'suspended' });
      given(running())
        .when({ ...command, data: { ...command.data, approval: { nodeId: 'sign-off', action: ACTION } } })
        .then(suspended().slice(running().length));
    });

    it('refuses to suspend at a node that is not an approval node', () => {
      const command = completeAttempt({ at: 5_000, outcome: 'suspended' });
      given(running())
        .when({ ...command, data: { ...command.data, approval: { nodeId: 'load', action: ACTION } } })
        .thenThrows(InvalidStateError);
    });
  });

  describe('when a person approves', () => {
    it('grants the approval and schedules a resume attempt that does not spend the retry budget', () => {
      given(suspended())
        .when(decide({ decision: 'approve', at: 9_000 }))
        .then([
          {
            type: 'ApprovalGranted',
            data: { nodeId: 'sign-off', actionDigest: DIGEST, decidedBy: OPERATOR, comment: null, at: iso(9_000) },
          },
          {
            type: 'AttemptScheduled',
            data: {
              attemptId: ATTEMPT_2,
              attemptNumber: 2,
              reason: 'resume',
              notBefore: iso(9_000),
              queueDeadline: iso(69_000),
              scheduledAt: iso(9_000),
            },
          },
        ]);
    });

    it('refuses a digest that no longer matches the pending action (approval_mismatch)', () => {
      given(suspended())
        .when(
          decide({ decision: 'approve', actionDigest: actionDigestOf({ ...ACTION, recipients: ['everyone@example.test'] }), at: 9_000 }),
        )
        .thenThrows(ApprovalMismatchError);
    });

    it('treats the same decision sent again as a replay', () => {
      given([
        ...suspended(),
        { type: 'ApprovalGranted', data: { nodeId: 'sign-off', actionDigest: DIGEST, decidedBy: OPERATOR, comment: null, at: iso(9_000) } },
        attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'resume', at: 9_000 }),
      ])
        .when(decide({ decision: 'approve', at: 9_500 }))
        .thenNothingHappens();
    });

    it('refuses a decision when nothing is pending', () => {
      given(running())
        .when(decide({ decision: 'approve', at: 9_000 }))
        .thenThrows(InvalidStateError);
    });
  });

  describe('when a person rejects', () => {
    it('records the rejection and fails the execution without retry', () => {
      given(suspended())
        .when(decide({ decision: 'reject', at: 9_000 }))
        .then([
          {
            type: 'ApprovalRejected',
            data: { nodeId: 'sign-off', actionDigest: DIGEST, decidedBy: OPERATOR, comment: null, at: iso(9_000) },
          },
          {
            type: 'ExecutionFailed',
            data: { error: { code: 'approval_rejected', message: `rejected by ${OPERATOR}`, retryable: false }, at: iso(9_000) },
          },
        ]);
    });
  });

  describe('when the approval node names its approvers', () => {
    const APPROVER = 'cfo@example.test';
    const onlyTheCfo = { action: ACTION, approvers: ['treasurer@example.test', APPROVER] };
    const granted = (by: string) => ({
      type: 'ApprovalGranted' as const,
      data: { nodeId: 'sign-off', actionDigest: DIGEST, decidedBy: by, comment: null, at: iso(9_000) },
    });

    it('lets an approver decide, and records who did', () => {
      given(suspended(onlyTheCfo))
        .when(decide({ decision: 'approve', at: 9_000, by: APPROVER }))
        .then([granted(APPROVER), attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'resume', at: 9_000 })]);
    });

    it('refuses anyone else (forbidden) and decides nothing, for good', () => {
      for (const decision of ['approve', 'reject'] as const) {
        given(suspended(onlyTheCfo))
          .when(decide({ decision, at: 9_000, by: OPERATOR }))
          .thenThrows<DomainError>(NotAnApproverError, (error) => {
            expect(error.code).toBe('forbidden');
            // The graph snapshot never changes: no later state would let this person decide.
            expect(error.final).toBe(true);
          });
      }
    });

    it('refuses anyone else even to repeat a decision an approver already made', () => {
      given([
        ...suspended(onlyTheCfo),
        granted(APPROVER),
        attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'resume', at: 9_000 }),
      ])
        .when(decide({ decision: 'approve', at: 9_500, by: OPERATOR }))
        .thenThrows('forbidden');
    });

    it('lets nobody decide when the list is empty', () => {
      given(suspended({ approvers: [] }))
        .when(decide({ decision: 'approve', at: 9_000, by: APPROVER }))
        .thenThrows(NotAnApproverError);
    });

    it('lets any operator decide a node that names no approvers', () => {
      given(suspended({ action: ACTION }))
        .when(decide({ decision: 'reject', at: 9_000, by: 'someone-else@example.test' }))
        .then([
          {
            type: 'ApprovalRejected',
            data: { nodeId: 'sign-off', actionDigest: DIGEST, decidedBy: 'someone-else@example.test', comment: null, at: iso(9_000) },
          },
          {
            type: 'ExecutionFailed',
            data: {
              error: { code: 'approval_rejected', message: 'rejected by someone-else@example.test', retryable: false },
              at: iso(9_000),
            },
          },
        ]);
    });
  });

  describe('when cancellation is requested while awaiting approval', () => {
    it('cancels at once: no worker holds the execution', () => {
      given(suspended())
        .when(requestCancel({ at: 9_000, reason: 'changed our mind' }))
        .then([
          { type: 'CancelRequested', data: { reason: 'changed our mind', requestedBy: OPERATOR, at: iso(9_000) } },
          { type: 'ExecutionCancelled', data: { reason: 'changed our mind', at: iso(9_000) } },
        ]);
    });
  });
});
