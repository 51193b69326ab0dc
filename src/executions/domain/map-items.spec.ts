import { describe, expect, it } from '@jest/globals';
import { InvalidStateError, StaleAttemptError } from '../../core/errors.js';
import type { RecordMapItems } from './execution.commands.js';
import { executionDecider } from './execution.decider.js';
import type { ExecutionEvent, WorkflowSnapshot } from './execution.events.js';
import {
  ATTEMPT_1,
  WORKER_A,
  WORKER_B,
  attemptClaimed,
  attemptScheduled,
  attemptSucceeded,
  aWorkflow,
  executionStarted,
  given,
  iso,
  time,
} from '../../../test/support/executions/execution-fixtures.js';

const withMap = (): WorkflowSnapshot => {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [...base.graph.nodes, { id: 'each', type: 'map', config: { items: 'input.rows', node: { type: 'noop' }, concurrency: 10 } }],
    },
  };
};

const running = (): ExecutionEvent[] => [
  executionStarted({ workflow: withMap() }),
  attemptScheduled({ at: 0 }),
  attemptClaimed({ at: 1_000 }),
];

const recordItems = (o: Partial<RecordMapItems['data']> & { at: number; workerId?: string }): RecordMapItems => ({
  type: 'RecordMapItems',
  data: {
    attemptId: ATTEMPT_1,
    workerId: o.workerId ?? WORKER_A,
    fencingToken: 1,
    nodeId: o.nodeId ?? 'each',
    started: o.started ?? [],
    completed: o.completed ?? [],
    failed: o.failed ?? [],
  },
  metadata: { now: time(o.at), actor: `worker:${o.workerId ?? WORKER_A}` },
});

const completed = (items: { index: number; output: unknown }[], at: number): ExecutionEvent => ({
  type: 'MapItemsCompleted',
  data: { attemptId: ATTEMPT_1, nodeId: 'each', items, at: iso(at) },
});

describe('RecordMapItems', () => {
  it('records each kind of item fact as one event, in the order started, completed, failed', () => {
    const error = { code: 'http_503', message: 'down' };
    given(running())
      .when(recordItems({ at: 2_000, started: [0, 1, 2], completed: [{ index: 0, output: 'a' }], failed: [{ index: 1, error }] }))
      .then([
        { type: 'MapItemsStarted', data: { attemptId: ATTEMPT_1, nodeId: 'each', indexes: [0, 1, 2], at: iso(2_000) } },
        completed([{ index: 0, output: 'a' }], 2_000),
        { type: 'MapItemsFailed', data: { attemptId: ATTEMPT_1, nodeId: 'each', items: [{ index: 1, error }], at: iso(2_000) } },
      ]);
  });

  it('keeps an item that already succeeded as it was: its completion again adds nothing', () => {
    given([...running(), completed([{ index: 0, output: 'a' }], 2_000)])
      .when(
        recordItems({
          at: 3_000,
          completed: [
            { index: 0, output: 'again' },
            { index: 1, output: 'b' },
            { index: 1, output: 'b twice' },
          ],
        }),
      )
      .then([completed([{ index: 1, output: 'b' }], 3_000)]);
    given([...running(), completed([{ index: 0, output: 'a' }], 2_000)])
      .when(recordItems({ at: 3_000, completed: [{ index: 0, output: 'again' }] }))
      .thenNothingHappens();
  });

  it('takes a replay of a claim whose attempt ended as already recorded', () => {
    given([...running(), attemptSucceeded({ at: 4_000, output: null })])
      .when(recordItems({ at: 5_000, started: [3] }))
      .thenNothingHappens();
  });

  it('refuses another worker, and a node that is not a map', () => {
    given(running())
      .when(recordItems({ at: 2_000, workerId: WORKER_B, started: [0] }))
      .thenThrows(StaleAttemptError);
    given(running())
      .when(recordItems({ at: 2_000, nodeId: 'extract', started: [0] }))
      .thenThrows(InvalidStateError);
  });

  it('keeps the outputs of succeeded items in the state, for the next claim', () => {
    const state = [
      ...running(),
      completed([{ index: 4, output: { ok: true } }], 2_000),
      completed([{ index: 1, output: 'b' }], 3_000),
    ].reduce(executionDecider.evolve, executionDecider.initialState());
    expect(state.status !== 'not_started' && state.mapItems).toEqual({ each: { 1: 'b', 4: { ok: true } } });
  });
});
