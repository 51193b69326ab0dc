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
/**
 * What a runner remembers between its batches, for `begin` to take instead of reading the
 * database: the state as of its last committed batch (what its batches read or wrote). The
 * runner is its version's only writer; the runtime forgets everything when a batch fails (its
 * writes were rolled back), and a new runner starts with nothing. Bounded: past `capacity`
 * entries the oldest are forgotten, and read again when needed.
 */
export class BatchMemo<T> {
  private readonly entries = new Map<string, T>();

  constructor(private readonly capacity = 1_000) {}

  get(key: string): T | undefined {
    return this.entries.get(key);
  }

  set(key: string, value: T): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  clear(): void {
    this.entries.clear();
  }
}

/**
 * The executions a batch touches that started before it (a start is its stream's first event,
 * so those started in the batch have nothing stored yet): what `memo` remembers of them, and
 * the ids it does not, for `begin` to read.
 */
export function recallEarlierExecutions<T>(events: readonly ProjectedEvent[], memo: BatchMemo<T>): { remembered: Map<string, T>; unknown: string[] } {
  const startedHere = new Set(events.filter((e) => e.type === 'ExecutionStarted').map((e) => e.executionId));
  const remembered = new Map<string, T>();
  const unknown: string[] = [];
  for (const id of new Set(events.map((e) => e.executionId))) {
    if (startedHere.has(id)) continue;
    const value = memo.get(id);
    if (value === undefined) unknown.push(id);
    else remembered.set(id, value);
  }
  return { remembered, unknown };
}

export interface ProjectionDefinition<Batch = unknown, Remembered = unknown> {
  readonly name: string;
  /** Bump when the tables or the handlers change: the projector then rebuilds beside the live version. */
  readonly version: number;
  /** Relations readers query; each is a view over `read_models.<relation><suffix>` of the live version. */
  readonly relations: readonly string[];
  /**
   * Live streams (SSE) are served from this read model: while one follows it, its runner holds
   * a short batch back for `ProjectorOptions.liveGatherMs` only, not `gatherMs`.
   */
  readonly feedsLiveStreams?: boolean;
  /** DDL of one version's tables, one statement each; every name carries `suffix`. Only what the handlers need. */
  tables(suffix: string): string[];
  /**
   * DDL of the indexes readers need. A rebuild loads its tables without them and creates them
   * once it has caught up with the log (bulk load, then index); a first version gets them at once.
   */
  indexes(suffix: string): string[];
  /**
   * Loads what the handlers will read: from `memo` where it has it, else with reads started at
   * once (before any `await`), so that they share the batch's first round trip. A batch that
   * needs no read sends everything, from BEGIN to COMMIT, in one.
   */
  begin(tx: SqlQueryable, tables: VersionTables, events: readonly ProjectedEvent[], memo: BatchMemo<Remembered>): Promise<Batch>;
  readonly handlers: EventHandlers<Batch>;
  /**
   * Queues the batch's writes with `tx.queue` (they go out with the COMMIT; any failure rolls
   * the batch back) and remembers in `memo` what the next batches may need of them.
   */
  commit(tx: SqlTransaction, tables: VersionTables, batch: Batch, memo: BatchMemo<Remembered>): void;
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
export function foldAndCommit<Batch, Remembered>(
  tx: SqlTransaction,
  definition: ProjectionDefinition<Batch, Remembered>,
  tables: VersionTables,
  batch: Batch,
  events: readonly ProjectedEvent[],
  memo: BatchMemo<Remembered>,
): void {
  for (const event of events) {
    const handler = definition.handlers[event.type] as (batch: Batch, event: ProjectedEvent) => void;
    handler(batch, event);
  }
  definition.commit(tx, tables, batch, memo);
}

/** Runs one batch through a definition: begin, one handler per event in order, commit. */
export async function applyBatch<Batch, Remembered>(
  tx: SqlTransaction,
  definition: ProjectionDefinition<Batch, Remembered>,
  tables: VersionTables,
  events: readonly ProjectedEvent[],
  memo: BatchMemo<Remembered>,
): Promise<void> {
  foldAndCommit(tx, definition, tables, await definition.begin(tx, tables, events, memo), events, memo);
}
