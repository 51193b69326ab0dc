import { describe, expect, it } from '@jest/globals';
import { systemActor } from '../../core/actors.js';
import { fold } from '../../core/decider.js';
import { holdsSlot } from './admit-execution.js';
import type { RecordChildResult } from './execution.commands.js';
import { executionDecider } from './execution.decider.js';
import type { ExecutionEvent, WorkflowSnapshot } from './execution.events.js';
import type { StartedExecution } from './execution.state.js';
import { childExecutionIdOf } from './subworkflow-children.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  EXECUTION_ID,
  aWorkflow,
  admitExecution,
  attemptClaimed,
  attemptScheduled,
  completeAttempt,
  executionAwaitingSlot,
  executionStarted,
  given,
  iso,
  time,
} from '../../../test/support/executions/execution-fixtures.js';

/** Two children side by side: `a` and `b` each run the workflow `invoice`. */
function twoChildren(): WorkflowSnapshot {
  const base = aWorkflow();
  const child = (id: string) => ({ id, type: 'subworkflow', config: { workflow: 'invoice' } });
  return { ...base, graph: { ...base.graph, nodes: [child('a'), child('b')], edges: [] } };
}

const CHILD_A = childExecutionIdOf(EXECUTION_ID, 'a', 1);
const CHILD_B = childExecutionIdOf(EXECUTION_ID, 'b', 1);

const childStarted = (nodeId: string, childExecutionId: string): ExecutionEvent => ({
  type: 'ChildExecutionStarted',
  data: { nodeId, attemptId: ATTEMPT_1, childExecutionId, workflow: 'invoice', revision: null, input: {}, depth: 1, at: iso(2_000) },
});

/** Admitted with a slot (bounded workspace), or scheduled at once (no bound); claimed; both children asked for. */
const askedForChildren = (bounded: boolean): ExecutionEvent[] => [
  executionStarted({ workflow: twoChildren() }),
  ...(bounded ? [executionAwaitingSlot(), attemptScheduled({ at: 500 })] : [attemptScheduled()]),
  attemptClaimed({ at: 1_000 }),
  childStarted('a', CHILD_A),
  childStarted('b', CHILD_B),
];

const suspend = () => {
  const command = completeAttempt({ at: 3_000, outcome: 'suspended' });
  return { ...command, data: { ...command.data, tasks: ['a', 'b'] } };
};
const suspended: ExecutionEvent = {
  type: 'AttemptSuspended',
  data: {
    attemptId: ATTEMPT_1,
    waits: [
      { nodeId: 'a', kind: 'subworkflow' },
      { nodeId: 'b', kind: 'subworkflow' },
    ],
    at: iso(3_000),
  },
};
const yielded: ExecutionEvent = { type: 'SlotYielded', data: { attemptId: ATTEMPT_1, at: iso(3_000) } };

const childSucceeded = (childExecutionId: string, at: number): RecordChildResult => ({
  type: 'RecordChildResult',
  data: { childExecutionId, outcome: 'succeeded', output: { ok: true }, nextAttemptId: ATTEMPT_2 },
  metadata: { now: time(at), actor: systemActor('subworkflows') },
});
const ended = (nodeId: string, childExecutionId: string, at: number): ExecutionEvent[] => [
  { type: 'ChildExecutionEnded', data: { nodeId, childExecutionId, status: 'succeeded', at: iso(at) } },
  { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId, output: { ok: true }, at: iso(at) } },
];
const resumeWaits = (at: number): ExecutionEvent => ({
  type: 'ExecutionAwaitingSlot',
  data: { attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'resume', waitingFor: 'workspace_quota', at: iso(at) },
});

describe('a run that waits only for its children, in a workspace with a concurrency bound', () => {
  it('gives its slot back in the append that suspends it', () => {
    given(askedForChildren(true)).when(suspend()).then([suspended, yielded]);
    const state = fold(executionDecider, [...askedForChildren(true), suspended, yielded]) as StartedExecution;
    expect(holdsSlot(state, ATTEMPT_1)).toBe(false);
    expect(state).toMatchObject({ status: 'waiting', slotAttemptId: null, slotYielded: true });
  });

  it('keeps nothing to give back without a bound: it never held a slot', () => {
    given(askedForChildren(false)).when(suspend()).then([suspended]);
  });

  it('waits for a slot again to resume once its children ended; a later end adds no second wait', () => {
    const waiting = [...askedForChildren(true), suspended, yielded];
    given([...waiting, ...ended('a', CHILD_A, 4_000)])
      .when(childSucceeded(CHILD_B, 5_000))
      .then([...ended('b', CHILD_B, 5_000), resumeWaits(5_000)]);
    // The first end lets nothing go on (b still runs): no wait yet.
    given(waiting)
      .when(childSucceeded(CHILD_A, 4_000))
      .then(ended('a', CHILD_A, 4_000));
  });

  it('resumes with a slot of its own when the admission grants one, as a run admitted after its start', () => {
    const history = [
      ...askedForChildren(true),
      suspended,
      yielded,
      ...ended('a', CHILD_A, 4_000),
      ...ended('b', CHILD_B, 5_000),
      resumeWaits(5_000),
    ];
    expect(fold(executionDecider, history)).toMatchObject({ status: 'queued', awaitingSlot: { attemptId: ATTEMPT_2, reason: 'resume' } });
    given(history)
      .when(admitExecution({ attemptId: ATTEMPT_2, at: 9_000 }))
      .then([attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'resume', at: 9_000 })]);
    const admitted = fold(executionDecider, [
      ...history,
      attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'resume', at: 9_000 }),
    ]);
    expect(holdsSlot(admitted, ATTEMPT_2)).toBe(true);
  });
});
