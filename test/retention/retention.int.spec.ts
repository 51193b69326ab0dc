import { afterEach, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { EventStore, EventToAppend, Position } from '../../src/core/event-store.port.js';
import { randomIds } from '../../src/core/ids.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import { EXECUTION_SCHEMA_VERSION, executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import type { ExecutionEvent } from '../../src/executions/domain/execution.events.js';
import { RetentionHorizon } from '../../src/retention/application/retention-horizon.js';
import { sweepRetention } from '../../src/retention/application/retention-sweep.js';
import { isBeyondHorizon } from '../../src/retention/domain/retention-policy.js';
import { readModelCandidates } from '../../src/retention/infrastructure/read-model-candidates.js';
import {
  attemptClaimed,
  attemptFailed,
  attemptScheduled,
  executionFailed,
  executionStarted,
  FAILURE,
  redriveRequested,
  T0,
  WORKSPACE_ID,
} from '../support/executions/execution-fixtures.js';
import { openProjectionHarness, type ProjectionHarness, type Rows } from '../projections/support/projection-harness.js';
import { ALL_STORE_KINDS } from '../support/test-app.js';

const DAY = 24 * 60 * 60 * 1000;

/** An execution's events as the write side records them, under its own id. */
function recorded(executionId: string, events: ExecutionEvent[]): EventToAppend[] {
  return events.map((event) => ({
    id: randomUUID(),
    type: event.type,
    data: event.type === 'ExecutionStarted' ? { ...event.data, executionId } : event.data,
    metadata: { schemaVersion: EXECUTION_SCHEMA_VERSION, workspaceId: WORKSPACE_ID, executionId, actor: 'alice' },
  }));
}

async function write(store: EventStore, events: ExecutionEvent[]): Promise<{ id: string; last: Position }> {
  const id = randomUUID();
  const { position } = await store.appendToStream(executionStreamId(id), recorded(id, events), { expectedRevision: 'no_stream' });
  return { id, last: position };
}

function sweeper(store: EventStore, sql: ProjectionHarness['sql'], now: Date) {
  return sweepRetention({
    store,
    executions: new ExecutionStreams(store, { now: () => now }, randomIds),
    candidates: readModelCandidates(sql),
    horizon: new RetentionHorizon(store),
    clock: { now: () => now },
    ids: randomIds,
    days: 30,
    pageSize: 2,
  });
}

/** Fixture times count from T0; these histories count back from the real now, which the store records beside them. */
const ago = (ms: number): number => Date.now() - T0 - ms;

function runningSince(startedAgo: number): ExecutionEvent[] {
  return [executionStarted({ at: ago(startedAgo) }), attemptScheduled({ at: ago(startedAgo) }), attemptClaimed({ at: ago(startedAgo) })];
}

function failedAgo(endedAgo: number): ExecutionEvent[] {
  const at = ago(endedAgo);
  return [...runningSince(endedAgo + 1_000), attemptFailed({ at, error: FAILURE }), executionFailed({ at, error: FAILURE })];
}

const only = (rows: Rows, ids: Set<string>) => rows.filter((row) => ids.has(String(row['execution_id'])));

describe.each(ALL_STORE_KINDS)('retention on %s', (kind) => {
  let harness: ProjectionHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it('deletes ended executions past the horizon from the store and every read model; a rebuild gives the same rows', async () => {
    const h = (harness = await openProjectionHarness(kind));
    h.projector({ liveBatchSize: 3 });
    // Two ended 40 days ago, one running since then, one that ended two days ago.
    const expired = [await write(h.store, failedAgo(40 * DAY)), await write(h.store, failedAgo(40 * DAY))];
    const running = await write(h.store, runningSince(40 * DAY));
    const recent = await write(h.store, failedAgo(2 * DAY));
    const kept = new Set([running.id, recent.id]);
    await h.caughtUp();
    const before = await h.dump();
    const headBefore = (await h.store.headPosition())!;
    const [firstOfExpired] = await h.store.readStream(executionStreamId(expired[0].id));

    // 30 days of retention. Two replicas sweep at once.
    const now = new Date();
    const reports = await Promise.all([sweeper(h.store, h.sql, now), sweeper(h.store, h.sql, now)]);
    expect(reports.map((r) => r.deleted)).toContain(2);
    await h.caughtUp();

    for (const { id } of expired) expect(await h.store.readStream(executionStreamId(id))).toEqual([]);
    for (const id of kept) expect((await h.store.readStream(executionStreamId(id))).length).toBeGreaterThan(0);
    const after = await h.dump();
    expect(after.executions.map((row) => row['execution_id']).sort()).toEqual([...kept].sort());
    expect(after.executions).toEqual(only(before.executions, kept));
    expect(after.timeline).toEqual(only(before.timeline, kept));
    expect(after.timeline_owners).toEqual(only(before.timeline_owners, kept));
    expect(after.audit).toEqual(only(before.audit, kept));
    expect(after.audit_executions).toEqual(only(before.audit_executions, kept));

    // The horizon is the newest deleted position: resuming before it is refused, after it not.
    const horizon = await new RetentionHorizon(h.store).current();
    expect(horizon).toBe([expired[0].last, expired[1].last].sort().at(-1));
    expect(isBeyondHorizon(firstOfExpired.position, horizon)).toBe(true);
    expect(isBeyondHorizon(headBefore, horizon)).toBe(false);

    // Positions are never handed out again: the next append lies beyond everything before.
    const later = await write(h.store, runningSince(0));
    expect(later.last > headBefore).toBe(true);
    expect(await h.store.isAheadOfLog(expired[1].last)).toBe(false);

    // A sweep with nothing left to delete changes nothing.
    expect(await sweeper(h.store, h.sql, now)).toMatchObject({ deleted: 0 });
    await h.caughtUp();
    const settled = await h.dump();

    // Rebuilt from the log (on KurrentDB the deleted events are still in $all, and the fact
    // removes them again), every read model equals the live one.
    for (const name of ['executions', 'timeline', 'audit', 'schedules']) {
      const { version } = await h.rebuild(name);
      await h.switched(name, version);
    }
    await h.caughtUp();
    expect(await h.dump()).toEqual(settled);
  });

  it('keeps an execution redriven between the sweep’s read and its delete: the delete at the old revision is refused', async () => {
    const h = (harness = await openProjectionHarness(kind));
    const failed = await write(h.store, failedAgo(40 * DAY));
    const now = new Date();
    const executions = new ExecutionStreams(h.store, { now: () => now }, randomIds);
    const report = await sweepRetention({
      store: h.store,
      // A redrive lands right after the sweep read the stream.
      executions: {
        load: async (id) => {
          const loaded = await executions.load(id);
          await h.store.appendToStream(executionStreamId(id), recorded(id, [redriveRequested({ at: 6_000, attemptNumber: 2 })]), {
            expectedRevision: loaded.history.at(-1)!.revision,
          });
          return loaded;
        },
      },
      candidates: { endedBefore: async () => [{ executionId: failed.id, position: failed.last }], auditEntriesBefore: async () => false },
      horizon: new RetentionHorizon(h.store),
      clock: { now: () => now },
      ids: randomIds,
      days: 30,
    });
    expect(report).toMatchObject({ deleted: 0, facts: 0 });
    expect((await executions.load(failed.id)).history).toHaveLength(failedAgo(0).length + 1);
    expect(await new RetentionHorizon(h.store).current()).toBeNull();
  });
});
