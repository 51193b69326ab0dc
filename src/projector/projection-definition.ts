import type { Position } from '../core/event-store.port.js';
import type { SqlQueryable, SqlTransaction } from '../postgres/sql-client.port.js';
import {
  EXECUTION_EVENT_TYPES,
  type ExecutionEvent,
  type ExecutionEventOf,
  type ExecutionEventType,
} from '../executions/domain/execution.events.js';

/**
 * An execution event as a projection receives it: the payload validated by the executions event
 * parser (zod at the edge), plus where it sits in the log.
 */
export type ProjectedEvent<E extends { type: string; data: unknown } = ExecutionEvent> = E & {
  position: Position;
  eventId: string;
  executionId: string;
  /** Revision of the event in its execution stream. */
  revision: number;
  recordedAt: string;
  metadata: Record<string, unknown>;
};

/** Qualified table names of the version being written, by relation: `executions` → `read_models.executions_v3`. */
export type VersionTables = Readonly<Record<string, string>>;

export type EventHandler<Batch, T extends ExecutionEventType> = (batch: Batch, event: ProjectedEvent<ExecutionEventOf<T>>) => void;

/** One handler per event type: a new event type does not compile until every projection says what it does with it. */
export type EventHandlers<Batch> = { readonly [T in ExecutionEventType]: EventHandler<Batch, T> };

/**
 * A read-model projection, loaded by the projector from `projections/`.
 *
 * Each batch of events is one unit of work: `begin` loads what the handlers will read (one query
 * per batch, not per event), the handlers fold events into the batch in memory, and `commit`
 * queues the result as multi-row statements (`tx.queue`). The runtime runs all three, plus the
 * checkpoint, in one transaction of two round trips: BEGIN, the checkpoint and `begin`'s reads
 * travel together, then the queued writes with the COMMIT.
 */
export interface ProjectionDefinition<Batch = unknown> {
  readonly name: string;
  /** Bump when the tables or the handlers change: the projector then rebuilds beside the live version. */
  readonly version: number;
  /** Relations readers query; each is a view over `read_models.<relation><suffix>` of the live version. */
  readonly relations: readonly string[];
  /** DDL of one version's tables, one statement each; every name carries `suffix`. Only what the handlers need. */
  tables(suffix: string): string[];
  /**
   * DDL of the indexes readers need. A rebuild loads its tables without them and creates them
   * once it has caught up with the log (bulk load, then index); a first version gets them at once.
   */
  indexes(suffix: string): string[];
  /** Starts its reads at once (before any `await`), so that they share the batch's first round trip. */
  begin(tx: SqlQueryable, tables: VersionTables, events: readonly ProjectedEvent[]): Promise<Batch>;
  readonly handlers: EventHandlers<Batch>;
  /** Queues the batch's writes with `tx.queue`; they go out with the COMMIT, and any failure rolls the batch back. */
  commit(tx: SqlTransaction, tables: VersionTables, batch: Batch): void;
}

/** The schema that holds every version's tables and the views readers use. */
export const READ_MODELS_SCHEMA = 'read_models';

export function versionSuffix(version: number): string {
  return `_v${version}`;
}

export function versionTables(definition: ProjectionDefinition<any>, version: number): VersionTables {
  return Object.fromEntries(definition.relations.map((relation) => [relation, `${READ_MODELS_SCHEMA}.${relation}${versionSuffix(version)}`]));
}

/** The same handler for every event type (a fold, an append), still one entry per type. */
export function sameHandlerForEveryType<Batch>(handler: (batch: Batch, event: ProjectedEvent) => void): EventHandlers<Batch> {
  return Object.fromEntries(EXECUTION_EVENT_TYPES.map((type) => [type, handler])) as unknown as EventHandlers<Batch>;
}

/** Folds the batch's events in order, one handler each, then queues the writes (`commit`). */
export function foldAndCommit<Batch>(
  tx: SqlTransaction,
  definition: ProjectionDefinition<Batch>,
  tables: VersionTables,
  batch: Batch,
  events: readonly ProjectedEvent[],
): void {
  for (const event of events) {
    const handler = definition.handlers[event.type] as (batch: Batch, event: ProjectedEvent) => void;
    handler(batch, event);
  }
  definition.commit(tx, tables, batch);
}

/** Runs one batch through a definition: begin, one handler per event in order, commit. */
export async function applyBatch<Batch>(
  tx: SqlTransaction,
  definition: ProjectionDefinition<Batch>,
  tables: VersionTables,
  events: readonly ProjectedEvent[],
): Promise<void> {
  foldAndCommit(tx, definition, tables, await definition.begin(tx, tables, events), events);
}
