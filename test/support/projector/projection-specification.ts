import assert from 'node:assert/strict';
import { types } from 'node:util';
import type { ProjectedEvent } from '../../../projections/execution-events.js';
import type { RecordedEvent } from '../../../src/core/event-store.port.js';
import type { ExecutionEvent } from '../../../src/executions/domain/execution.events.js';
import type { SqlClient } from '../../../src/postgres/sql-client.port.js';
import {
  applyBatch,
  BatchMemo,
  READ_MODELS_SCHEMA,
  toBatchItem,
  versionSuffix,
  versionTables,
  type AnyProjectionDefinition,
  type ProjectedEventBase,
} from '../../../src/projector/projection-definition.js';

/** A domain event and, optionally, the execution it belongs to (else DEFAULT_EXECUTION). */
export type GivenEvent = ExecutionEvent | { executionId: string; event: ExecutionEvent };

/** Rows of every relation of a projection, each ordered by its first column, timestamps as ISO strings. */
export type ReadModelRows = Record<string, Record<string, unknown>[]>;

export interface ProjectionThen {
  /** Every batch split gives exactly these rows (deep strict equality). */
  then(expected: ReadModelRows): Promise<void>;
  /** The rows (all batch splits agreeing), for finer assertions. */
  rows(): Promise<ReadModelRows>;
}

/** Fixed-width positions, like the store's: `position(3)` is the third event given. */
export const position = (n: number): string => `p${String(n).padStart(10, '0')}`;

/**
 * `given(events).then(readModel)` over a projection definition, on a real database (PGlite in
 * the unit specs). Each `given` is applied three times into fresh tables — one event per batch,
 * three per batch, all in one — and the three read models must be equal: a handler that depends
 * on where batches split fails here.
 *
 *   const spec = projectionSpecification(timelineProjection, () => db);
 *   await spec.given([executionStarted(), attemptScheduled()]).then({ timeline: [...], timeline_owners: [...] });
 */
export function projectionSpecification(definition: AnyProjectionDefinition, database: () => SqlClient, defaultExecution: string) {
  let nextVersion = 1;
  return {
    given(given: GivenEvent[]): ProjectionThen {
      const events = given.map((entry, index): ProjectedEvent => {
        const { executionId, event } = 'event' in entry ? entry : { executionId: defaultExecution, event: entry };
        const revision = given.slice(0, index).filter((e) => ('event' in e ? e.executionId : defaultExecution) === executionId).length;
        return {
          ...event,
          position: position(index + 1),
          eventId: `00000000-0000-4000-8000-${String(index + 1).padStart(12, '0')}`,
          executionId,
          revision,
          recordedAt: new Date(Date.UTC(2030, 0, 1, 0, 0, index)).toISOString(),
          metadata: { schemaVersion: 1 },
        };
      });
      return checked(events, () => nextVersion++, definition, database);
    },
  };
}

/** An event as a stream holds it, before the store gives it a place: its stream, type, payload and metadata. */
export interface GivenRecordedEvent {
  streamId: string;
  type: string;
  data: unknown;
  metadata?: Record<string, unknown>;
}

/**
 * `given(recorded events).then(readModel)` for a projection whose source reads the whole log
 * (any stream): each event is recorded as the store would (position, id, revision within its
 * stream, time), decoded by the definition's own source, and projected in the three batch
 * splits of `projectionSpecification`.
 */
export function recordedProjectionSpecification(definition: AnyProjectionDefinition, database: () => SqlClient) {
  let nextVersion = 1;
  return {
    given(given: GivenRecordedEvent[]): ProjectionThen {
      const recorded = given.map((entry, index): RecordedEvent => ({
        id: `00000000-0000-4000-8000-${String(index + 1).padStart(12, '0')}`,
        type: entry.type,
        streamId: entry.streamId,
        revision: given.slice(0, index).filter((e) => e.streamId === entry.streamId).length,
        position: position(index + 1),
        data: JSON.parse(JSON.stringify(entry.data)) as unknown,
        metadata: entry.metadata ?? {},
        recordedAt: new Date(Date.UTC(2030, 0, 1, 0, 0, index)).toISOString(),
      }));
      // Retention's facts pass as the runner hands them on, between the decoded events.
      const events = recorded.flatMap((event) => {
        const decoded = toBatchItem(event, definition.source) as ProjectedEventBase | null;
        return decoded === null ? [] : [decoded];
      });
      return checked(events, () => nextVersion++, definition, database);
    },
  };
}

function checked(
  events: readonly ProjectedEventBase[],
  version: () => number,
  definition: AnyProjectionDefinition,
  database: () => SqlClient,
): ProjectionThen {
  const rows = async (): Promise<ReadModelRows> => {
    const results: ReadModelRows[] = [];
    for (const batchSize of [1, 3, Math.max(1, events.length)]) {
      results.push(await project(database(), definition, version(), events, batchSize));
    }
    assert.deepStrictEqual(results[1], results[0], 'batches of 3 and batches of 1 built different read models');
    assert.deepStrictEqual(results[2], results[0], 'one batch and batches of 1 built different read models');
    return results[0];
  };
  return { rows, then: async (expected) => assert.deepStrictEqual(await rows(), expected) };
}

async function project(
  sql: SqlClient,
  definition: AnyProjectionDefinition,
  version: number,
  events: readonly ProjectedEventBase[],
  batchSize: number,
): Promise<ReadModelRows> {
  await sql.query(`create schema if not exists ${READ_MODELS_SCHEMA}`);
  const suffix = `_spec${versionSuffix(version)}`;
  for (const statement of [...definition.tables(suffix), ...definition.indexes(suffix)]) await sql.query(statement);
  const tables = Object.fromEntries(
    Object.entries(versionTables(definition, version)).map(([relation]) => [
      relation,
      `${READ_MODELS_SCHEMA}.${relation}_spec${versionSuffix(version)}`,
    ]),
  );
  // Remembered across the batches, as a runner does: later batches take what earlier ones wrote.
  const memo = new BatchMemo<unknown>();
  for (let start = 0; start < events.length; start += batchSize) {
    await sql.transaction((tx) => applyBatch(tx, definition, tables, events.slice(start, start + batchSize), memo));
  }
  const result: ReadModelRows = {};
  for (const [relation, table] of Object.entries(tables)) {
    const { rows } = await sql.query<Record<string, unknown>>(`select * from ${table} order by 1`);
    result[relation] = rows.map((row) =>
      Object.fromEntries(Object.entries(row).map(([k, v]) => [k, types.isDate(v) ? v.toISOString() : v])),
    );
  }
  return result;
}
