import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import { pointViewsAt } from '../../src/projector/projector.schema.js';
import { ProjectionSignals } from '../../src/projector/projection-signals.js';
import { PostgresTimelineReader } from '../../projections/timeline.reader.js';
import { statementText, type SqlQueryable } from '../../src/postgres/sql-client.port.js';
import { PROJECTION_DEFINITIONS } from '../../projections/projections.registry.js';
import { eventually } from '../support/eventually.js';
import { openProjectionHarness, type ProjectionHarness } from './support/projection-harness.js';
import { writeRandomHistories } from './support/random-history.js';

const timeline = PROJECTION_DEFINITIONS.find((d) => d.name === 'timeline')!;

/**
 * The switch of promise 9 (docs/architecture.md) replaces a read model's views one after another in one transaction. A read
 * that arrives in between waits for the switch and then answers from the new views; it must
 * never be chosen as a deadlock victim (a 500 for the user: once seen on /history under load).
 * Postgres only: PGlite runs one statement at a time, so nothing there can interleave.
 */
describe('reads that arrive in the middle of a switch on postgres', () => {
  let h: ProjectionHarness;
  let executionId: string;
  let workspaceId: string;
  let lastRevision: number;

  beforeAll(async () => {
    h = await openProjectionHarness('postgres');
    const { executions } = await writeRandomHistories(h.store, { seed: 11, steps: 40 });
    h.projector();
    await h.caughtUp();
    executionId = executions[0]!;
    const events = await h.store.readStream(executionStreamId(executionId));
    workspaceId = (events[0].data as { workspaceId: string }).workspaceId;
    lastRevision = events.length - 1;
  });
  afterAll(() => h?.close());

  /** Blocked lock requests of other sessions: a read waiting for the switch shows up here. */
  async function waitingLocks(): Promise<number> {
    const { rows } = await h.sql.query<{ n: number }>('select count(*)::int as n from pg_locks where not granted');
    return rows[0].n;
  }

  it('answers every timeline read once the switch has committed', async () => {
    const reader = new PostgresTimelineReader(h.sql, new ProjectionSignals(h.sql));
    let reads: Promise<unknown[]> | undefined;

    await h.sql.transaction(async (tx) => {
      // The switch has replaced the first view and holds it; the readers arrive now.
      const paused: SqlQueryable = {
        async query(sql, params) {
          if (reads === undefined && statementText(sql).startsWith('drop view') && statementText(sql).includes('timeline_owners')) {
            reads = Promise.all([
              reader.executionInfo(executionId),
              reader.readExecution(executionId, null, 1000),
              reader.workspaceOf(executionId),
            ]);
            reads.catch(() => undefined);
            await eventually(async () => (await waitingLocks()) >= 2, { what: "both reads to wait on the switch's locks", intervalMs: 10 });
          }
          return tx.query(sql, params);
        },
      };
      await pointViewsAt(paused, timeline, 1);
    });

    const [info, history, owner] = await reads!;
    expect(info).toEqual({ workspaceId, lastRevision });
    expect((history as { revision: number }[]).map((e) => e.revision)).toEqual(Array.from({ length: lastRevision + 1 }, (_, k) => k));
    expect(owner).toBe(workspaceId);
  });
});
