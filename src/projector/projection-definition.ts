import type { Position, RecordedEvent } from '../core/event-store.port.js';
import { EXECUTIONS_EXPIRED, expiryOf, type Expiry } from '../core/retention.js';
import type { SqlQueryable, SqlTransaction } from '../postgres/sql-client.port.js';

/** What every projected event carries, whatever its domain: a type, and where it sits in the log. */
export interface ProjectedEventBase {
  readonly type: string;
  readonly position: Position;
}

/**
 * Where a projection's events come from: which recorded events of the global log it reads, and
 * how each is validated and decoded (zod at the edge). The runner still reads every event of
 * the log, so its checkpoint tracks the whole log; `decode` answers null for those the
 * projection does not read. Sources may cache by recorded event (runners at the head of the
 * log share the recorded objects); handlers never modify the events they are given.
 */
export interface ProjectionSource<E extends ProjectedEventBase> {
  decode(recorded: RecordedEvent): E | null;
}

/** Qualified table names of the version being written, by relation: `executions` → `read_models.executions_v3`. */
export type VersionTables = Readonly<Record<string, string>>;

/** One handler per event type: a new event type does not compile until every projection says what it does with it. */
export type EventHandlers<Batch, E extends ProjectedEventBase> = {
  readonly [T in E['type']]: (batch: Batch, event: Extract<E, { type: T }>) => void;
};

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

  delete(key: string): void {
    this.entries.delete(key);
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
 * A read-model projection, given to the projector by the application (`projections/`).
 *
 * Each batch of events is one unit of work: `begin` loads what the handlers will read (one query
 * per batch, not per event), the handlers fold events into the batch in memory, and `commit`
 * queues the result as multi-row statements (`tx.queue`). The runtime runs all three, plus the
 * checkpoint, in one transaction of two round trips: BEGIN, the checkpoint and `begin`'s reads
 * travel together, then the queued writes with the COMMIT.
 */
export interface ProjectionDefinition<Batch = unknown, Remembered = unknown, E extends ProjectedEventBase = ProjectedEventBase> {
  readonly name: string;
  /** The events it reads. */
  readonly source: ProjectionSource<E>;
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
  begin(tx: SqlQueryable, tables: VersionTables, events: readonly E[], memo: BatchMemo<Remembered>): Promise<Batch>;
  readonly handlers: EventHandlers<Batch, E>;
  /**
   * Queues the batch's writes with `tx.queue` (they go out with the COMMIT; any failure rolls
   * the batch back) and remembers in `memo` what the next batches may need of them.
   */
  commit(tx: SqlTransaction, tables: VersionTables, batch: Batch, memo: BatchMemo<Remembered>): void;
  /**
   * Retention's fact (src/core/retention.ts), in log order between the batch's events: queues
   * the deletion of the rows of the expired executions (and what else the fact prunes) and
   * forgets them in `memo`. Every projection says what it drops, if nothing.
   */
  expire(tx: SqlTransaction, tables: VersionTables, expiry: Expiry, memo: BatchMemo<Remembered>): void;
}

/** Retention's fact as the runtime hands it on: between the events of a batch, in log order. */
export interface ExpiryEvent extends ProjectedEventBase {
  readonly type: typeof EXECUTIONS_EXPIRED;
  readonly expiry: Expiry;
}

/** What a batch applies: the events the projection decodes, and retention's facts among them. */
export type BatchItem<E extends ProjectedEventBase = ProjectedEventBase> = E | ExpiryEvent;

/** A recorded event as a batch item: retention's fact, the projection's own event, or null. */
export function toBatchItem<E extends ProjectedEventBase>(recorded: RecordedEvent, source: ProjectionSource<E>): BatchItem<E> | null {
  const expiry = expiryOf(recorded);
  return expiry === null ? source.decode(recorded) : { type: EXECUTIONS_EXPIRED, position: expiry.position, expiry };
}

function isExpiry(item: BatchItem): item is ExpiryEvent {
  return item.type === EXECUTIONS_EXPIRED && 'expiry' in item;
}

/** A definition of any batch, memo and event type: what the projector and its catalog handle. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyProjectionDefinition = ProjectionDefinition<any, any, any>;

/** The schema that holds every version's tables and the views readers use. */
export const READ_MODELS_SCHEMA = 'read_models';

export function versionSuffix(version: number): string {
  return `_v${version}`;
}

export function versionTables(definition: AnyProjectionDefinition, version: number): VersionTables {
  return Object.fromEntries(
    definition.relations.map((relation) => [relation, `${READ_MODELS_SCHEMA}.${relation}${versionSuffix(version)}`]),
  );
}

/** Folds the batch's events in order, one handler each, then queues the writes (`commit`). */
export function foldAndCommit<Batch, Remembered, E extends ProjectedEventBase>(
  tx: SqlTransaction,
  definition: ProjectionDefinition<Batch, Remembered, E>,
  tables: VersionTables,
  batch: Batch,
  events: readonly E[],
  memo: BatchMemo<Remembered>,
): void {
  for (const event of events) {
    const handler = (definition.handlers as unknown as Record<string, (batch: Batch, event: E) => void>)[event.type];
    if (handler === undefined) throw new Error(`projection ${definition.name} has no handler for ${event.type}`);
    handler(batch, event);
  }
  definition.commit(tx, tables, batch, memo);
}

/**
 * Runs one batch through a definition: begin, one handler per event in order, commit; a
 * retention fact among the events splits the batch, and its `expire` runs between the parts.
 */
export async function applyBatch<Batch, Remembered, E extends ProjectedEventBase>(
  tx: SqlTransaction,
  definition: ProjectionDefinition<Batch, Remembered, E>,
  tables: VersionTables,
  items: readonly BatchItem<E>[],
  memo: BatchMemo<Remembered>,
): Promise<void> {
  let events: E[] = [];
  const flush = async () => {
    if (events.length > 0) foldAndCommit(tx, definition, tables, await definition.begin(tx, tables, events, memo), events, memo);
    events = [];
  };
  for (const item of items) {
    if (!isExpiry(item)) {
      events.push(item);
      continue;
    }
    await flush();
    definition.expire(tx, tables, item.expiry, memo);
  }
  await flush();
}
