import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ExecutionEvent } from '../src/executions/domain/execution.events.js';
import {
  EXECUTION_ID,
  WORKSPACE_ID,
  aRunningExecution,
  attemptScheduled,
  executionStarted,
  leaseExtended,
} from '../test/support/executions/execution-fixtures.js';
import { PgliteSqlClient } from '../src/postgres/pglite-sql-client.js';
import { position, projectionSpecification } from '../test/support/projector/projection-specification.js';
import { OrphanEventError, timelineProjection } from './timeline.projection.js';

const OTHER_EXECUTION = '0b8f4e0a-1c2d-4e5f-8a9b-000000000002';
const OTHER_WORKSPACE = 'ws-other';

const eventId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const recordedAt = (n: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, n - 1)).toISOString();

function row(n: number, event: ExecutionEvent, revision: number, execution = EXECUTION_ID, workspace = WORKSPACE_ID) {
  return {
    position: position(n),
    event_id: eventId(n),
    execution_id: execution,
    workspace_id: workspace,
    type: event.type,
    revision,
    recorded_at: recordedAt(n),
    data: JSON.parse(JSON.stringify(event.data)),
  };
}

describe('the timeline projection', () => {
  let db: PgliteSqlClient;
  const spec = projectionSpecification(timelineProjection, () => db, EXECUTION_ID);

  beforeAll(async () => {
    db = await PgliteSqlClient.open();
  });
  afterAll(() => db?.close());

  describe('when an execution runs', () => {
    it('holds every event at its global position, with its workspace taken from the start', async () => {
      const events = [...aRunningExecution(), leaseExtended({ at: 2_000 })];
      await spec.given(events).then({
        timeline: events.map((event, i) => row(i + 1, event, i)),
        timeline_owners: [{ execution_id: EXECUTION_ID, workspace_id: WORKSPACE_ID }],
      });
    });
  });

  describe('when executions of two workspaces interleave', () => {
    it('gives each event the workspace of its own execution', async () => {
      const started = executionStarted();
      const other = {
        ...started,
        data: { ...(started.data as object), executionId: OTHER_EXECUTION, workspaceId: OTHER_WORKSPACE },
      } as ExecutionEvent;
      const scheduled = attemptScheduled();
      const rows = await spec
        .given([started, { executionId: OTHER_EXECUTION, event: other }, scheduled, { executionId: OTHER_EXECUTION, event: scheduled }])
        .rows();
      expect(rows.timeline.map((r) => [r.position, r.execution_id, r.workspace_id, r.revision])).toEqual([
        [position(1), EXECUTION_ID, WORKSPACE_ID, 0],
        [position(2), OTHER_EXECUTION, OTHER_WORKSPACE, 0],
        [position(3), EXECUTION_ID, WORKSPACE_ID, 1],
        [position(4), OTHER_EXECUTION, OTHER_WORKSPACE, 1],
      ]);
      expect(rows.timeline_owners).toEqual([
        { execution_id: EXECUTION_ID, workspace_id: WORKSPACE_ID },
        { execution_id: OTHER_EXECUTION, workspace_id: OTHER_WORKSPACE },
      ]);
    });
  });

  describe('when the log holds an event of an execution that never started', () => {
    it('refuses the batch rather than file the event under no workspace', async () => {
      await expect(spec.given([attemptScheduled()]).rows()).rejects.toThrow(OrphanEventError);
    });
  });
});
