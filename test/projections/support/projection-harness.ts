import { expect } from '@jest/globals';
import { fold } from '../../../src/core/decider.js';
import { types } from 'node:util';
import { createLogger } from '../../../src/core/logger.js';
import { KurrentDbEventStore } from '../../../src/event-store/kurrentdb/kurrentdb-event-store.js';
import { PostgresEventStore } from '../../../src/event-store/postgres/postgres-event-store.js';
import { evolve, initialState } from '../../../src/executions/domain/execution.state.js';
import { parseExecutionEvent } from '../../../src/executions/domain/execution-event.parser.js';
import { PgSqlClient } from '../../../src/postgres/pg-sql-client.js';
import { PgliteSqlClient } from '../../../src/postgres/pglite-sql-client.js';
import type { SqlClient, SqlQueryable } from '../../../src/postgres/sql-client.port.js';
import type { EventStore, RecordedEvent } from '../../../src/core/event-store.port.js';
import { liveCheckpoint, readCatalog, requestRebuild } from '../../../src/projector/projection-catalog.js';
import { ProjectionSignals } from '../../../src/projector/projection-signals.js';
import { Projector, type ProjectorOptions } from '../../../src/projector/projector.js';
import { ensureCatalog } from '../../../src/projector/projector.schema.js';
import { PROJECTION_DEFINITIONS } from '../../../projections/projections.registry.js';
import { eventually } from '../../support/eventually.js';
import { KurrentDbDouble } from '../../support/kurrentdb-double/kurrentdb-double.js';
import { createTestDatabase } from '../../support/postgres-server.js';
import type { StoreKind } from '../../support/test-app.js';

export type Rows = Record<string, unknown>[];

/** A store, its read models and any number of projectors over them: several "processes" in one. */
export interface ProjectionHarness {
  store: EventStore;
  sql: SqlClient;
  /** Starts one more projector over the same database. */
  projector(options?: Partial<ProjectorOptions>): Projector;
  /** Resolves once every live read model has applied the whole log. */
  caughtUp(timeoutMs?: number): Promise<void>;
  rebuild(name: string): Promise<{ rebuildId: string; version: number }>;
  /** Resolves once `version` of `name` is the live one. */
  switched(name: string, version: number, timeoutMs?: number): Promise<void>;
  /** Every row of every read model, through the views readers use, in key order. */
  dump(): Promise<Record<string, Rows>>;
  /** Checks the live read models against the log itself: the fold of each stream, and every event. */
  expectModelsEqualTheLog(): Promise<void>;
  /**
   * The database as another process sees it: a client with connections (and a LISTEN
   * connection) of its own on Postgres; on PGlite, which belongs to one process, `sql` itself.
   */
  sqlOfAnotherProcess(): SqlClient;
  close(): Promise<void>;
}

/** The Postgres event store on each of its SQL clients: the harness reaches into its database. */
export const HARNESS_KINDS = ['pglite', 'postgres'] as const satisfies readonly StoreKind[];

/**
 * Kind `kurrentdb` is KurrentDB over its gRPC double, with the read models on PGlite (the harness
 * then cannot reach into the store's database).
 */
export async function openProjectionHarness(kind: StoreKind): Promise<ProjectionHarness> {
  const connectionString = kind === 'postgres' ? await createTestDatabase('projections') : null;
  const sql: SqlClient = connectionString === null ? await PgliteSqlClient.open() : new PgSqlClient({ connectionString, max: 20 });
  const others: SqlClient[] = [];
  const double = kind === 'kurrentdb' ? await KurrentDbDouble.start() : null;
  const store: EventStore =
    double === null ? await PostgresEventStore.open(sql, { pollIntervalMs: 100 }) : KurrentDbEventStore.connect(double.url);
  await ensureCatalog(sql, PROJECTION_DEFINITIONS);
  const logger = createLogger({ level: 'silent' });
  const signals = new ProjectionSignals(sql);
  const projectors: Projector[] = [];

  const dump = () => dumpReadModels(sql);

  return {
    store,
    sql,
    projector(options = {}) {
      const projector = new Projector({
        sql,
        store,
        definitions: PROJECTION_DEFINITIONS,
        signals,
        logger,
        options: { reconcileIntervalMs: 50, retryDelayMs: 50, ...options },
      });
      projectors.push(projector);
      projector.start();
      return projector;
    },
    async caughtUp(timeoutMs = 60_000) {
      await eventually(
        async () => {
          const head = await store.headPosition();
          for (const { name } of PROJECTION_DEFINITIONS) {
            const checkpoint = await liveCheckpoint(sql, name);
            if (head !== null && (checkpoint === null || checkpoint < head)) return false;
          }
          return true;
        },
        { what: 'every read model to apply the log', timeoutMs },
      );
    },
    rebuild: (name) =>
      requestRebuild(
        sql,
        PROJECTION_DEFINITIONS.find((d) => d.name === name)!,
        crypto.randomUUID(),
      ),
    async switched(name, version, timeoutMs = 60_000) {
      await eventually(async () => (await readCatalog(sql)).get(name)?.liveVersion === version, {
        what: `${name} v${version} to be live`,
        timeoutMs,
      });
    },
    dump,
    expectModelsEqualTheLog: () => expectReadModelsEqualTheLog(store, sql),
    sqlOfAnotherProcess() {
      if (connectionString === null) return sql;
      const other = new PgSqlClient({ connectionString, max: 4 });
      others.push(other);
      return other;
    },
    async close() {
      for (const projector of projectors) await projector.stop();
      await signals.close();
      await store.close();
      await double?.stop();
      for (const other of others) await other.close();
      await sql.close();
    },
  };
}

/** Every row of every read model, through the views readers use, in key order. */
export async function dumpReadModels(sql: SqlQueryable): Promise<Record<string, Rows>> {
  const result: Record<string, Rows> = {};
  for (const definition of PROJECTION_DEFINITIONS) {
    for (const relation of definition.relations) {
      const { rows } = await sql.query<Record<string, unknown>>(`select * from read_models.${relation} order by 1`);
      result[relation] = rows.map((row) =>
        Object.fromEntries(Object.entries(row).map(([k, v]) => [k, types.isDate(v) ? v.toISOString() : v])),
      );
    }
  }
  return result;
}

/** The live read models against the log itself: each execution is its stream's fold, the timeline is every event. */
export async function expectReadModelsEqualTheLog(store: EventStore, sql: SqlQueryable): Promise<void> {
  const log = await store.readAll({ maxCount: 1_000_000, streamPrefixes: ['execution-'] });
  const streams = new Map<string, RecordedEvent[]>();
  for (const event of log) streams.set(event.streamId, [...(streams.get(event.streamId) ?? []), event]);
  const owners = new Map<string, string>();
  const expectedExecutions = [...streams].map(([streamId, events]) => {
    const state = JSON.parse(JSON.stringify(fold({ evolve, initialState }, events.map(parseExecutionEvent)))) as {
      executionId: string;
      workspaceId: string;
    };
    owners.set(streamId.slice('execution-'.length), state.workspaceId);
    return { execution_id: state.executionId, state, created_position: events[0].position, position: events.at(-1)!.position };
  });
  const expectedTimeline = log.map((e) => ({
    position: e.position,
    event_id: e.id,
    execution_id: e.streamId.slice('execution-'.length),
    workspace_id: owners.get(e.streamId.slice('execution-'.length)),
    type: e.type,
    revision: e.revision,
    recorded_at: e.recordedAt,
    data: JSON.parse(JSON.stringify(parseExecutionEvent(e).data)),
  }));
  const actual = await dumpReadModels(sql);
  const byId = (a: { execution_id: string }, b: { execution_id: string }) => (a.execution_id < b.execution_id ? -1 : 1);
  const actualExecutions = actual.executions.map(({ execution_id, state, created_position, position }) => ({
    execution_id,
    state,
    created_position,
    position,
  }));
  expect(actualExecutions.sort(byId as never)).toEqual(expectedExecutions.sort(byId));
  expect(actual.timeline).toEqual(expectedTimeline);
  // The audit trail: one entry per execution and workflow event, with its metadata's actor and workspace.
  const audited = await store.readAll({ maxCount: 1_000_000, streamPrefixes: ['execution-', 'workflow-'] });
  const expectedAudit = audited.map((e) => ({
    position: e.position,
    workspace_id: e.metadata['workspaceId'],
    actor: e.metadata['actor'],
    action: e.type,
    execution_id: e.streamId.startsWith('execution-') ? e.streamId.slice('execution-'.length) : null,
  }));
  expect(
    actual.audit.map(({ position, workspace_id, actor, action, execution_id }) => ({
      position,
      workspace_id,
      actor,
      action,
      execution_id,
    })),
  ).toEqual(expectedAudit);
}
