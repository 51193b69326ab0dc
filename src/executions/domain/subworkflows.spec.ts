import { describe, expect, it } from '@jest/globals';
import { NotFoundError, StaleAttemptError } from '../../core/errors.js';
import { systemActor, workerActor } from '../../core/actors.js';
import { fold } from '../../core/decider.js';
import type { RecordChildResult, RecordNodeResult } from './execution.commands.js';
import type { ChildEnd, ExecutionEvent, ParentLink, WorkflowSnapshot } from './execution.events.js';
import { executionDecider } from './execution.decider.js';
import { failedInTry } from './tasks.js';
import { MAX_SUBWORKFLOW_DEPTH, childExecutionIdOf, childLinkOf, rootOf } from './subworkflow-children.js';
import type { StartedExecution } from './execution.state.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  ATTEMPT_3,
  EXECUTION_ID,
  THREE_ATTEMPTS,
  WORKER_A,
  aWorkflow,
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  completeAttempt,
  executionCancelled,
  executionStarted,
  given,
  iso,
  requestCancel,
  startExecution,
  time,
} from '../../../test/support/executions/execution-fixtures.js';

/** prepare → bill (runs the workflow `invoice` as a child) → notify. */
function withChild(): WorkflowSnapshot {
  const base = aWorkflow({ retry: THREE_ATTEMPTS });
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [
        { id: 'prepare', type: 'noop' },
        { id: 'bill', type: 'subworkflow', config: { workflow: 'invoice' } },
        { id: 'notify', type: 'noop' },
      ],
      edges: [
        { from: 'prepare', to: 'bill' },
        { from: 'bill', to: 'notify' },
      ],
    },
  };
}

const CHILD_1 = childExecutionIdOf(EXECUTION_ID, 'bill', 1);
const CHILD_2 = childExecutionIdOf(EXECUTION_ID, 'bill', 2);
const INPUT = { customer: 'c-7' };
const MANAGER = systemActor('subworkflows');

const running = (parent?: ParentLink): ExecutionEvent[] => {
  const started = executionStarted({ workflow: withChild() });
  if (parent !== undefined && started.type === 'ExecutionStarted') started.data.parent = parent;
  return [started, attemptScheduled({ at: 0 }), attemptClaimed({ at: 1_000 })];
};

function nodeWaiting(o: { at: number; attemptId?: string; fencingToken?: number }): RecordNodeResult {
  return {
    type: 'RecordNodeResult',
    data: {
      attemptId: o.attemptId ?? ATTEMPT_1,
      workerId: WORKER_A,
      fencingToken: o.fencingToken ?? 1,
      kind: 'node_waiting',
      nodeId: 'bill',
      wait: { kind: 'subworkflow', input: INPUT },
    },
    metadata: { now: time(o.at), actor: workerActor(WORKER_A) },
  };
}

const childStarted = (o: { at: number; childExecutionId?: string; attemptId?: string; depth?: number }): ExecutionEvent => ({
  type: 'ChildExecutionStarted',
  data: {
    nodeId: 'bill',
    attemptId: o.attemptId ?? ATTEMPT_1,
    childExecutionId: o.childExecutionId ?? CHILD_1,
    workflow: 'invoice',
    revision: null,
    input: INPUT,
    depth: o.depth ?? 1,
    at: iso(o.at),
  },
});

const suspendedAtChild = (at = 3_000): ExecutionEvent => ({
  type: 'AttemptSuspended',
  data: { attemptId: ATTEMPT_1, waits: [{ nodeId: 'bill', kind: 'subworkflow' }], at: iso(at) },
});

const waiting = (): ExecutionEvent[] => [...running(), childStarted({ at: 2_000 }), suspendedAtChild()];

function childEnded(o: { at: number; outcome: ChildEnd; output?: unknown; childExecutionId?: string }): RecordChildResult {
  return {
    type: 'RecordChildResult',
    data: {
      childExecutionId: o.childExecutionId ?? CHILD_1,
      outcome: o.outcome,
      ...(o.output !== undefined ? { output: o.output } : {}),
      ...(o.outcome === 'failed' ? { error: { code: 'card_declined', message: 'declined' } } : {}),
      nextAttemptId: ATTEMPT_2,
    },
    metadata: { now: time(o.at), actor: MANAGER },
  };
}

const ended = (o: { at: number; status: ChildEnd; childExecutionId?: string }): ExecutionEvent => ({
  type: 'ChildExecutionEnded',
  data: { nodeId: 'bill', childExecutionId: o.childExecutionId ?? CHILD_1, status: o.status, at: iso(o.at) },
});

const resumeScheduled = (at: number, attemptId = ATTEMPT_2, attemptNumber = 2): ExecutionEvent =>
  attemptScheduled({ attemptId, attemptNumber, reason: 'resume', at });

describe('subworkflow nodes', () => {
  describe('asking for the child', () => {
    it('names the child with an id derived from the execution, the node and its count, one level down', () => {
      given(running())
        .when(nodeWaiting({ at: 2_000 }))
        .then([childStarted({ at: 2_000 })]);
      expect(CHILD_1).toMatch(/^[0-9a-f-]{36}$/);
      expect(childExecutionIdOf(EXECUTION_ID, 'bill', 1)).toBe(CHILD_1);
      expect(CHILD_2).not.toBe(CHILD_1);
    });

    it('never names a second child while one runs: a redelivered or resumed request is no new fact', () => {
      given([...running(), childStarted({ at: 2_000 })])
        .when(nodeWaiting({ at: 2_500 }))
        .thenNothingHappens();
      given([...waiting(), resumeScheduled(4_000), attemptClaimed({ attemptId: ATTEMPT_2, fencingToken: 2, at: 4_500 })])
        .when(nodeWaiting({ at: 5_000, attemptId: ATTEMPT_2, fencingToken: 2 }))
        .thenNothingHappens();
    });

    it('refuses a request of a claim that is not current', () => {
      given(running())
        .when(nodeWaiting({ at: 2_000, fencingToken: 9 }))
        .thenThrows(StaleAttemptError);
    });

    it('sits one level below its parent, and fails the node beyond the depth limit', () => {
      const parent = { executionId: '0b8f4e0a-1c2d-4e5f-8a9b-0000000000ff', nodeId: 'outer', depth: 3 };
      given(running(parent))
        .when(nodeWaiting({ at: 2_000 }))
        .then([childStarted({ at: 2_000, depth: 4 })]);
      given(running({ ...parent, depth: MAX_SUBWORKFLOW_DEPTH }))
        .when(nodeWaiting({ at: 2_000 }))
        .then([
          {
            type: 'NodeFailed',
            data: {
              attemptId: ATTEMPT_1,
              nodeId: 'bill',
              error: {
                code: 'subworkflow_depth_exceeded',
                message: `a child of node bill would sit at depth ${MAX_SUBWORKFLOW_DEPTH + 1}; at most ${MAX_SUBWORKFLOW_DEPTH} levels of sub-workflows run`,
                retryable: false,
              },
              at: iso(2_000),
            },
          },
        ]);
    });

    it('fails the node, not retryable, when the child’s workflow already runs above it (a cycle)', () => {
      const cycle = (lineage: string) => ({
        type: 'NodeFailed' as const,
        data: {
          attemptId: ATTEMPT_1,
          nodeId: 'bill',
          error: {
            code: 'subworkflow_cycle',
            message: `node bill would run invoice, which already runs above it (${lineage})`,
            retryable: false,
          },
          at: iso(2_000),
        },
      });
      // invoice → nightly-export → invoice.
      const parent = { executionId: 'e-root', nodeId: 'outer', depth: 1, rootExecutionId: 'e-root', ancestors: ['invoice'] };
      given(running(parent))
        .when(nodeWaiting({ at: 2_000 }))
        .then([cycle('invoice → nightly-export → invoice')]);
      // A workflow whose node names itself (published before that was refused) runs itself once, at most.
      const itself = running();
      if (itself[0].type === 'ExecutionStarted') itself[0].data.workflow = { ...itself[0].data.workflow, name: 'invoice' };
      given(itself)
        .when(nodeWaiting({ at: 2_000 }))
        .then([cycle('invoice → invoice')]);
    });

    it('gives a child the root of its tree and the workflows above it', () => {
      const top = fold(executionDecider, running()) as StartedExecution;
      expect(rootOf(top)).toBe(EXECUTION_ID);
      const link = childLinkOf(top, 'bill');
      expect(link).toEqual({
        executionId: EXECUTION_ID,
        nodeId: 'bill',
        depth: 1,
        rootExecutionId: EXECUTION_ID,
        ancestors: ['nightly-export'],
      });
      const child = fold(executionDecider, running(link)) as StartedExecution;
      expect(childLinkOf(child, 'bill')).toMatchObject({
        depth: 2,
        rootExecutionId: EXECUTION_ID,
        ancestors: ['nightly-export', 'nightly-export'],
      });
      // A child started before roots were recorded roots a tree of its own.
      const legacy = fold(executionDecider, running({ executionId: 'e-old', nodeId: 'outer', depth: 1 })) as StartedExecution;
      expect(rootOf(legacy)).toBe(EXECUTION_ID);
    });

    it('suspends the attempt waiting for the child; the execution waits and holds no lease', () => {
      const command = completeAttempt({ at: 3_000, outcome: 'suspended' });
      given([...running(), childStarted({ at: 2_000 })])
        .when({ ...command, data: { ...command.data, tasks: ['bill'] } })
        .then([suspendedAtChild()]);
      const state = fold(executionDecider, waiting());
      expect(state).toMatchObject({
        status: 'waiting',
        waits: [{ nodeId: 'bill', kind: 'subworkflow' }],
        children: { [CHILD_1]: { nodeId: 'bill', status: 'running', workflow: 'invoice' } },
        nodes: { bill: { status: 'waiting' } },
      });
    });
  });

  describe('the child’s start', () => {
    const parent = { executionId: EXECUTION_ID, nodeId: 'bill', depth: 1 };

    it('carries its parent; starting the same child again is a replay', () => {
      const start = startExecution({ at: 0 });
      const command = { ...start, data: { ...start.data, parent } };
      const [first, second] = executionDecider.decide(command, executionDecider.initialState());
      expect(first).toMatchObject({ type: 'ExecutionStarted', data: { parent } });
      expect(second).toMatchObject({ type: 'AttemptScheduled' });
      given([first, second]).when(command).thenNothingHappens();
    });
  });

  describe('the child’s end', () => {
    it('succeeds the node with the child’s output and resumes the parent', () => {
      given(waiting())
        .when(childEnded({ at: 4_000, outcome: 'succeeded', output: { invoice: 'inv-1' } }))
        .then([
          ended({ at: 4_000, status: 'succeeded' }),
          { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'bill', output: { invoice: 'inv-1' }, at: iso(4_000) } },
          resumeScheduled(4_000),
        ]);
    });

    it('records one end once: the same end again is a replay', () => {
      given([...waiting(), ended({ at: 4_000, status: 'succeeded' })])
        .when(childEnded({ at: 4_100, outcome: 'succeeded', output: {} }))
        .thenNothingHappens();
    });

    it('fails the node `child_failed` naming the child, and resumes so that the try fails', () => {
      const events = executionDecider.decide(childEnded({ at: 4_000, outcome: 'failed' }), fold(executionDecider, waiting()));
      expect(events.map((e) => e.type)).toEqual(['ChildExecutionEnded', 'NodeFailed', 'AttemptScheduled']);
      const failed = events[1];
      expect(failed.type === 'NodeFailed' && failed.data.error).toEqual({
        code: 'child_failed',
        message: `child execution ${CHILD_1} ended failed: card_declined: declined`,
        retryable: true,
      });
      const state = fold(executionDecider, [...waiting(), ...events]);
      if (state.status === 'not_started') throw new Error('not started');
      expect(Object.keys(failedInTry(state))).toEqual(['bill']);
    });

    it('a cancelled or timed-out child fails the node too', () => {
      for (const outcome of ['cancelled', 'timed_out'] as const) {
        const events = executionDecider.decide(childEnded({ at: 4_000, outcome }), fold(executionDecider, waiting()));
        expect(events.map((e) => e.type)).toEqual(['ChildExecutionEnded', 'NodeFailed', 'AttemptScheduled']);
      }
    });

    it('a retried try starts a new child with a new id', () => {
      const failedTry = [
        ...waiting(),
        ended({ at: 4_000, status: 'failed' }),
        {
          type: 'NodeFailed' as const,
          data: { attemptId: ATTEMPT_1, nodeId: 'bill', error: { code: 'child_failed', message: 'x' }, at: iso(4_000) },
        },
        resumeScheduled(4_000),
        attemptClaimed({ attemptId: ATTEMPT_2, fencingToken: 2, at: 4_500 }),
        attemptFailed({ attemptId: ATTEMPT_2, at: 5_000, error: { code: 'child_failed', message: 'x' } }),
        attemptScheduled({ attemptId: ATTEMPT_3, attemptNumber: 3, reason: 'retry', at: 5_000 }),
        attemptClaimed({ attemptId: ATTEMPT_3, fencingToken: 3, at: 6_000 }),
      ];
      given(failedTry)
        .when(nodeWaiting({ at: 7_000, attemptId: ATTEMPT_3, fencingToken: 3 }))
        .then([childStarted({ at: 7_000, attemptId: ATTEMPT_3, childExecutionId: CHILD_2 })]);
    });

    it('after the parent was cancelled, only records the child’s end (its node shows cancelled)', () => {
      const cancelled = [...waiting(), ...executionDecider.decide(requestCancel({ at: 3_500 }), fold(executionDecider, waiting()))];
      expect(cancelled.at(-1)).toEqual(executionCancelled({ at: 3_500, reason: 'no longer needed' }));
      given(cancelled)
        .when(childEnded({ at: 4_000, outcome: 'cancelled' }))
        .then([ended({ at: 4_000, status: 'cancelled' })]);
      const state = fold(executionDecider, [...cancelled, ended({ at: 4_000, status: 'cancelled' })]);
      expect(state).toMatchObject({
        status: 'cancelled',
        nodes: { bill: { status: 'cancelled' } },
        children: { [CHILD_1]: { status: 'cancelled' } },
      });
    });

    it('refuses the end of a child it never started', () => {
      given(waiting())
        .when(childEnded({ at: 4_000, outcome: 'succeeded', childExecutionId: CHILD_2 }))
        .thenThrows(NotFoundError);
    });
  });
});
