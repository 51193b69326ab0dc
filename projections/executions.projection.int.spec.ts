import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { fold } from '../src/core/decider.js';
import type { ExecutionEvent } from '../src/executions/domain/execution.events.js';
import { evolve, initialState } from '../src/executions/domain/execution.state.js';
import {
  ATTEMPT_2,
  EXECUTION_ID,
  FAILURE,
  THREE_ATTEMPTS,
  WORKSPACE_ID,
  aQueuedExecution,
  aRunningExecution,
  aWorkflow,
  attemptCancelled,
  attemptFailed,
  attemptScheduled,
  attemptSucceeded,
  cancelRequested,
  executionCancelled,
  executionFailed,
  executionStarted,
  executionSucceeded,
  iso,
  nodeStarted,
  nodeSucceeded,
  redriveRequested,
} from '../test/support/executions/execution-fixtures.js';
import { PgliteSqlClient } from '../src/postgres/pglite-sql-client.js';
import { position, projectionSpecification, recordedProjectionSpecification } from '../test/support/projector/projection-specification.js';
import { executionsProjection } from './executions.projection.js';

const OTHER_EXECUTION = '0b8f4e0a-1c2d-4e5f-8a9b-000000000002';

/** The row the read model must hold for these events: the domain's fold, plus its columns. */
function rowOf(
  events: ExecutionEvent[],
  columns: { status: string; cancel: boolean; attempts: number; ended: string | null; last: number; created?: number; traceId?: string },
) {
  const state = JSON.parse(JSON.stringify(fold({ evolve, initialState }, events))) as {
    executionId: string;
    startedAt: string;
    updatedAt: string;
  };
  return {
    execution_id: state.executionId,
    workspace_id: WORKSPACE_ID,
    workflow_name: 'nightly-export',
    workflow_revision: 1,
    status: columns.status,
    cancel_requested: columns.cancel,
    attempt_count: columns.attempts,
    started_at: state.startedAt,
    updated_at: state.updatedAt,
    ended_at: columns.ended,
    created_position: position(columns.created ?? 1),
    position: position(columns.last),
    revision: columns.last - 1,
    trace_id: columns.traceId ?? null,
    has_open_tasks: false,
    parent_execution_id: null,
    state,
  };
}

describe('the executions projection', () => {
  let db: PgliteSqlClient;
  const spec = projectionSpecification(executionsProjection, () => db, EXECUTION_ID);

  beforeAll(async () => {
    db = await PgliteSqlClient.open();
  });
  afterAll(() => db?.close());

  describe('when an execution starts', () => {
    it('holds one queued execution, created at the position of its start', async () => {
      const events = aQueuedExecution();
      await spec
        .given(events)
        .then({ executions: [rowOf(events, { status: 'queued', cancel: false, attempts: 1, ended: null, last: 2 })] });
    });
  });

  describe('when a worker runs it', () => {
    it('is running, with the nodes the worker reported, at the position of the last event', async () => {
      const events = [
        ...aRunningExecution(),
        nodeStarted({ nodeId: 'extract', at: 1_100 }),
        nodeSucceeded({ nodeId: 'extract', at: 1_200, output: { rows: 3 } }),
      ];
      await spec
        .given(events)
        .then({ executions: [rowOf(events, { status: 'running', cancel: false, attempts: 1, ended: null, last: 5 })] });
    });

    it('ends with the output when the attempt succeeds', async () => {
      const events = [
        ...aRunningExecution(),
        attemptSucceeded({ at: 2_000, output: { ok: true } }),
        executionSucceeded({ at: 2_000, output: { ok: true } }),
      ];
      const rows = await spec.given(events).rows();
      expect(rows.executions).toEqual([rowOf(events, { status: 'succeeded', cancel: false, attempts: 1, ended: iso(2_000), last: 5 })]);
      expect(rows.executions[0].state).toMatchObject({ output: { ok: true }, endedAt: iso(2_000) });
    });
  });

  describe('when it is retried and then redriven', () => {
    it('counts every attempt and forgets the earlier end', async () => {
      const workflow = aWorkflow({ retry: THREE_ATTEMPTS });
      const events = [
        ...aRunningExecution({ workflow }),
        attemptFailed({ at: 5_000, error: FAILURE }),
        attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'retry', at: 5_000, notBefore: 6_000 }),
        attemptCancelled({ attemptId: ATTEMPT_2, at: 7_000 }),
        executionFailed({ at: 7_000, error: FAILURE }),
        redriveRequested({ at: 9_000, attemptNumber: 3, attemptId: '0b8f4e0a-1c2d-4e5f-8a9b-0000000a0003' }),
        attemptScheduled({ attemptId: '0b8f4e0a-1c2d-4e5f-8a9b-0000000a0003', attemptNumber: 3, reason: 'redrive', at: 9_000 }),
      ];
      await spec
        .given(events)
        .then({ executions: [rowOf(events, { status: 'queued', cancel: false, attempts: 3, ended: null, last: 9 })] });
    });
  });

  describe('when a cancel is requested', () => {
    it('shows the request while the worker still runs, and the end once it stops', async () => {
      const requested = [...aRunningExecution(), cancelRequested({ at: 3_000 })];
      await spec
        .given(requested)
        .then({ executions: [rowOf(requested, { status: 'running', cancel: true, attempts: 1, ended: null, last: 4 })] });
      const ended = [...requested, attemptCancelled({ at: 4_000 }), executionCancelled({ at: 4_000 })];
      await spec
        .given(ended)
        .then({ executions: [rowOf(ended, { status: 'cancelled', cancel: true, attempts: 1, ended: iso(4_000), last: 6 })] });
    });
  });

  describe('when two executions interleave in the log', () => {
    it('keeps them apart, each at its own last position', async () => {
      const other = {
        ...executionStarted(),
        data: { ...(executionStarted().data as object), executionId: OTHER_EXECUTION },
      } as ExecutionEvent;
      const [started, scheduled, claimed] = aRunningExecution();
      const given = [
        started,
        { executionId: OTHER_EXECUTION, event: other },
        scheduled,
        { executionId: OTHER_EXECUTION, event: attemptScheduled() },
        claimed,
      ];
      const rows = await spec.given(given).rows();
      expect(rows.executions.map((r) => [r.execution_id, r.status, r.created_position, r.position])).toEqual([
        [EXECUTION_ID, 'running', position(1), position(5)],
        [OTHER_EXECUTION, 'queued', position(2), position(4)],
      ]);
    });
  });

  describe('when the start was traced', () => {
    // A database of its own: this specification numbers its table versions from 1 again.
    let traced: PgliteSqlClient;
    beforeAll(async () => {
      traced = await PgliteSqlClient.open();
    });
    afterAll(() => traced.close());

    it('keeps the trace id of ExecutionStarted’s traceparent, whatever later events carry', async () => {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const streamId = `execution-${EXECUTION_ID}`;
      const [started, scheduled] = [executionStarted(), attemptScheduled()];
      const { executions } = await recordedProjectionSpecification(executionsProjection, () => traced)
        .given([
          { streamId, type: started.type, data: started.data, metadata: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } },
          { streamId, type: scheduled.type, data: scheduled.data, metadata: { traceparent: `00-${'1'.repeat(32)}-00f067aa0ba902b7-01` } },
        ])
        .rows();
      expect(executions.map((row) => row['trace_id'])).toEqual([traceId]);
    });
  });
});
