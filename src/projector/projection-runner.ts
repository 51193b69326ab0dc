import type { EventStore, Position, RecordedEvent } from '../core/event-store.port.js';
import { gatherBatches } from '../core/gather-batches.js';
import type { Logger } from '../core/logger.js';
import type { SqlClient, SqlTransaction, TransactionOptions } from '../postgres/sql-client.port.js';
import {
  checkpointRefusal,
  createIndexes,
  dropUnusedVersions,
  holdLiveForSwitch,
  moveCheckpoint,
  readCheckpoint,
  switchIfCaughtUp,
} from './projection-catalog.js';
import {
  BatchMemo,
  applyBatch,
  toBatchItem,
  versionTables,
  type AnyProjectionDefinition,
  type BatchItem,
} from './projection-definition.js';
import type { ProjectionSignals } from './projection-signals.js';
import type { SharedTransactions } from './shared-transactions.js';

export type RunnerRole = 'live' | 'building';

/** What one committed (or about to commit) batch did. */
export interface BatchInfo {
  name: string;
  version: number;
  role: RunnerRole;
  /** Checkpoint after the batch. */
  position: Position;
  /** Log events the batch consumed (execution events and others). */
  events: number;
  /** The batch made this version the live one. */
  switched: boolean;
}

/** Fault injection and observation points, for tests and benchmarks. */
export interface RunnerHooks {
  /** Inside the batch's transaction, after its writes: throwing here rolls the whole batch back. */
  beforeCommit?(batch: BatchInfo): void | Promise<void>;
  afterCommit?(batch: BatchInfo): void | Promise<void>;
}

export interface RunnerOptions {
  sql: SqlClient;
  store: EventStore;
  definition: AnyProjectionDefinition;
  version: number;
  role: RunnerRole;
  batchSize: number;
  /** How long a short page waits for more to share its transaction (see gatherBatches). */
  gatherMs: number | (() => number);
  signals: ProjectionSignals;
  log: Logger;
  hooks?: RunnerHooks;
  /** The projector's own observer: a committed batch proves the runner healthy again. */
  onCommitted?: (batch: BatchInfo) => void;
  /** Where a live batch may share its transaction with other read models' (see shared-transactions.ts). */
  shared?: SharedTransactions;
}

/** The runner's checkpoint moved under it: another writer, or its version was retired. */
class FencedError extends Error {}

/** A caught-up rebuild holds the live version still for its switch: apply the batch again shortly. */
class HeldError extends Error {}

/** How long a caught-up rebuild may hold the live version still; renewed while it keeps trying. */
const SWITCH_HOLD_MS = 5_000;
const HELD_RETRY_MS = 20;

/**
 * Applies the global log to one version of one projection, from its checkpoint on. Each batch's
 * read-model writes and its checkpoint commit in one transaction, so a crash at any point
 * neither applies an event twice nor skips one. A building version switches itself live in the
 * transaction of the batch that catches up, then goes on as the live runner.
 *
 * It reads every event of the log, not only those its source decodes: its checkpoint then
 * tracks the whole log, so "this read model has applied everything up to position P" holds for
 * any P the store hands out (read-your-writes waits on exactly that).
 */
export class ProjectionRunner {
  role: RunnerRole;
  position: Position | null = null;
  /** A rebuild loads without indexes until it has caught up; it may only switch with them. */
  private indexed = true;
  /** What the definition keeps between this runner's batches (see BatchMemo). */
  private readonly memo = new BatchMemo<unknown>();
  /** A reader asked for this read model since the last batch began. */
  private hurried = false;

  constructor(private readonly options: RunnerOptions) {
    this.role = options.role;
  }

  get identity(): { name: string; version: number } {
    return { name: this.options.definition.name, version: this.options.version };
  }

  /** Resolves 'stopped' when `signal` aborts, 'fenced' when the version is no longer this runner's. */
  async run(signal: AbortSignal): Promise<'stopped' | 'fenced'> {
    const { sql, store, definition, version, batchSize, gatherMs } = this.options;
    const checkpoint = await readCheckpoint(sql, definition.name, version);
    if (checkpoint === null) return 'fenced';
    // Stopped (or its lock lost) while reading the checkpoint: the listener below would never hear it.
    if (signal.aborted) return 'stopped';
    this.position = checkpoint.position;
    this.indexed = checkpoint.indexed;
    // Its own abort: a runner that stops on an error must not leave a read waiting for new events.
    const reading = new AbortController();
    const stop = () => reading.abort();
    signal.addEventListener('abort', stop);
    const after = this.position;
    const pages = gatherBatches((gathering) => store.subscribeToAll({ after, batchSize, signal: gathering }), {
      windowMs: gatherMs,
      maxCount: batchSize,
      signal: reading.signal,
      // A reader waits for this read model: a live batch held back for more goes now (readers
      // wait for the live version only; a rebuild that switches becomes it).
      hurry: (cut) =>
        this.options.signals.onHurry(definition.name, () => {
          if (this.role !== 'live') return false;
          cut();
          // The batch that the reader waits for goes ahead of other work, and so does one held back.
          this.hurried = true;
          sql.startBackgroundNow?.();
          return true;
        }),
    });
    try {
      for await (const prepared of readAhead(pages, stop, (page) => prepare(page, this.options.definition.source))) {
        if (signal.aborted) break;
        await this.apply(prepared, signal);
      }
    } catch (error) {
      if (error instanceof FencedError) return 'fenced';
      throw error;
    } finally {
      signal.removeEventListener('abort', stop);
    }
    return 'stopped';
  }

  private async apply(prepared: PreparedPage, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        return await this.applyOnce(prepared);
      } catch (error) {
        if (!(error instanceof HeldError)) throw error;
        // Usually ends with the switch, which fences this runner out; at worst the hold expires.
        await new Promise((resolve) => setTimeout(resolve, HELD_RETRY_MS));
      }
    }
  }

  private async applyOnce({ page, events }: PreparedPage): Promise<void> {
    const { sql, definition, version, hooks, batchSize } = this.options;
    const next = page[page.length - 1].position;
    const tables = versionTables(definition, version);
    const info: BatchInfo = { name: definition.name, version, role: this.role, position: next, events: page.length, switched: false };
    // A rebuild still without indexes creates them in the batch that reaches the head: a short
    // page did, and so did a full one that ends exactly there (no further page would come).
    const indexNow =
      this.role === 'building' && !this.indexed && (page.length < batchSize || next === (await this.options.store.headPosition()));
    // Writes and checkpoint stay atomic; only durability of the last moments is traded, and a
    // batch lost to a server crash is simply applied again from the log. Nobody waits for a live
    // batch unless a reader asked or a live stream follows the read model: it can wait for an
    // embedded database to be free (see TransactionOptions.background), and carry more then.
    const background = this.role === 'live' && !this.hurried && !this.options.signals.watched(definition.name);
    this.hurried = false;
    try {
      await this.batchTransactions().transaction(
        async (tx) => {
          // The checkpoint moves first, refusing by raising, so nothing waits for its answer. The
          // batch's reads (what the memo lacks) travel with it and BEGIN; its writes go with the
          // COMMIT. A batch that needs no read is one round trip from BEGIN to COMMIT.
          moveCheckpoint(tx, definition.name, version, this.position, next, page.length);
          if (events.length > 0) await applyBatch(tx, definition, tables, events, this.memo);
          if (indexNow) await createIndexes(tx, definition, version);
          if (this.role === 'building' && (this.indexed || indexNow)) info.switched = await switchIfCaughtUp(tx, definition, version, next);
          await hooks?.beforeCommit?.(info);
        },
        { asynchronousCommit: true, background },
      );
    } catch (error) {
      // What the batch remembered was rolled back with it.
      this.memo.clear();
      const refusal = checkpointRefusal(error);
      if (refusal === 'held') throw new HeldError();
      if (refusal === 'fenced') throw new FencedError();
      throw error;
    }
    this.position = next;
    if (indexNow) this.indexed = true;
    // Caught up with the log but not with the live version, which keeps moving under load: ask
    // it to stand still, so that the next batches reach it and switch (promise 9 under traffic, docs/architecture.md).
    if (this.role === 'building' && this.indexed && !info.switched && page.length < batchSize) {
      await holdLiveForSwitch(sql, definition.name, version, SWITCH_HOLD_MS);
    }
    if (info.switched) {
      this.role = 'live';
      this.options.log.info('rebuilt projection is live', { projection: definition.name, version, position: next });
      // Housekeeping: a failure leaves tables nobody reads, dropped by the next attempt.
      void dropUnusedVersions(sql, definition).catch((error: unknown) =>
        this.options.log.warn('dropping retired projection tables failed', { projection: definition.name, error: String(error) }),
      );
    }
    this.options.signals.advanced(definition.name, this.role === 'live' ? next : null);
    this.options.onCommitted?.(info);
    await hooks?.afterCommit?.(info);
  }

  /** A live batch shares its transaction with other read models' batches ready at the same time. */
  private batchTransactions(): { transaction(work: (tx: SqlTransaction) => Promise<void>, options: TransactionOptions): Promise<void> } {
    const { sql, shared } = this.options;
    if (this.role !== 'live' || shared === undefined) return sql;
    return { transaction: (work, options) => shared.run(work, () => this.memo.clear(), options.background === true) };
  }
}

interface PreparedPage {
  page: RecordedEvent[];
  /** The page's events the projection reads, validated and decoded, and retention's facts. */
  events: BatchItem[];
}

function prepare(page: RecordedEvent[], source: AnyProjectionDefinition['source']): PreparedPage {
  const events: BatchItem[] = [];
  for (const recorded of page) {
    const event = toBatchItem(recorded, source);
    if (event !== null) events.push(event);
  }
  return { page, events };
}

/**
 * Reads and validates the next page while the caller applies the current one: the log read and
 * the parsing overlap with the writes, which mostly wait on the database.
 */
async function* readAhead<T, U>(source: AsyncIterable<T>, abort: () => void, transform: (value: T) => U): AsyncGenerator<U> {
  const iterator = source[Symbol.asyncIterator]();
  const read = () =>
    iterator
      .next()
      .then((r): IteratorResult<U, undefined> =>
        r.done === true ? { done: true, value: undefined } : { done: false, value: transform(r.value) },
      );
  let next = read();
  try {
    for (;;) {
      const result = await next;
      if (result.done === true) return;
      next = read();
      next.catch(() => undefined); // surfaces when awaited on the next turn
      yield result.value;
    }
  } finally {
    abort(); // ends the read in flight, which `return` would otherwise wait for
    await next.catch(() => undefined);
    await iterator.return?.();
  }
}
