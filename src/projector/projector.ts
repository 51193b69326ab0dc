import { randomUUID } from 'node:crypto';
import { DEFAULT_PROJECTOR_GATHER_MS } from '../config/config.js';
import type { EventStore, Position } from '../core/event-store.port.js';
import type { Logger } from '../core/logger.js';
import type { SessionLock, SessionLocks, SqlClient } from '../postgres/sql-client.port.js';
import { dropUnusedVersions, readCatalog, requestRebuild, type CatalogEntry } from './projection-catalog.js';
import type { AnyProjectionDefinition } from './projection-definition.js';
import { ProjectionRunner, type RunnerHooks, type RunnerRole } from './projection-runner.js';
import type { ProjectionSignals } from './projection-signals.js';
import { SharedTransactions } from './shared-transactions.js';

export interface ProjectorOptions {
  /** Upper bound of a live version's batch. */
  liveBatchSize: number;
  /** Upper bound of a rebuild's batch: larger batches, fewer transactions. */
  rebuildBatchSize: number;
  /**
   * While appends stream in (a batch came within this long of the one before), how long a
   * short batch waits for more to join its transaction; read models then lag by up to this
   * much more. A lone append after a quiet spell is applied at once (see gatherBatches), and a
   * live batch goes at once when a reader waits for it (`ProjectionSignals.hurry`, from any
   * process). `FLOSTRA_PROJECTOR_GATHER_MS` in a running app.
   */
  gatherMs: number;
  /**
   * The same for a projection that feeds live streams (`feedsLiveStreams`) while a live stream
   * (SSE) of any process follows it (`ProjectionSignals.watch`): what its clients see lags by it.
   */
  liveGatherMs: number;
  /** How often the catalog is read again: picks up rebuilds requested elsewhere and locks freed by dead processes. */
  reconcileIntervalMs: number;
  /** First pause before a failed runner is started again; doubles up to 30 s. */
  retryDelayMs: number;
  hooks?: RunnerHooks;
}

export const DEFAULT_PROJECTOR_OPTIONS: Readonly<ProjectorOptions> = Object.freeze({
  liveBatchSize: 500,
  rebuildBatchSize: 2_000,
  gatherMs: DEFAULT_PROJECTOR_GATHER_MS,
  liveGatherMs: 10,
  reconcileIntervalMs: 1_000,
  retryDelayMs: 1_000,
});

export interface ProjectorDependencies {
  sql: SqlClient;
  store: EventStore;
  definitions: readonly AnyProjectionDefinition[];
  signals: ProjectionSignals;
  logger: Logger;
  options?: Partial<ProjectorOptions>;
  /** The locks that keep one runner per version across processes; default: the database's session locks. */
  locks?: SessionLocks;
}

/** One runner this process runs. */
export interface LocalRunnerStatus {
  name: string;
  version: number;
  role: RunnerRole;
  position: Position | null;
}

interface Running {
  runner: ProjectionRunner;
  abort: AbortController;
  done: Promise<void>;
}

/**
 * The projector process role: keeps, for every projection, one runner for its live version and
 * one for the version being rebuilt, each wherever its lock is free (advisory locks: never two
 * runners, hence never two builders, of one version). Reconciles with the catalog periodically
 * and when poked; a failed runner is started again after a backoff.
 */
export class Projector {
  private readonly options: ProjectorOptions;
  private readonly locks: SessionLocks;
  private readonly log: Logger;
  private readonly running = new Map<string, Running>();
  private readonly failures = new Map<string, { error: string; at: string; retryAt: number; delayMs: number }>();
  private timer: NodeJS.Timeout | null = null;
  private reconciling: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  /** Live batches of this process's runners that are ready together commit together. */
  private readonly shared: SharedTransactions;

  constructor(private readonly deps: ProjectorDependencies) {
    this.options = { ...DEFAULT_PROJECTOR_OPTIONS, ...deps.options };
    this.shared = new SharedTransactions(deps.sql);
    this.locks = deps.locks ?? deps.sql.sessionLocks();
    this.log = deps.logger.child({ component: 'projector' });
  }

  /** Starts (or, after `stop`, restarts) reconciling and running. */
  start(): void {
    if (this.timer !== null) return;
    this.stopped = false;
    this.timer = setInterval(() => this.poke(), this.options.reconcileIntervalMs);
    this.poke();
  }

  /** Reads the catalog again soon (a rebuild was requested, a runner ended). */
  poke(): void {
    if (this.stopped) return;
    if (this.reconciling !== null) {
      this.again = true;
      return;
    }
    this.reconciling = (async () => {
      do {
        this.again = false;
        try {
          await this.reconcile();
        } catch (error) {
          this.log.warn('reading the projection catalog failed; retrying', { error: String(error) });
        }
      } while (this.again && !this.stopped);
      this.reconciling = null;
    })();
  }

  /** Stops every runner after its batch in flight, and frees their locks. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.reconciling;
    for (const { abort } of this.running.values()) abort.abort();
    await Promise.all([...this.running.values()].map((r) => r.done));
    await this.locks.close();
  }

  /** The runners of this process. */
  runners(): LocalRunnerStatus[] {
    return [...this.running.values()].map(({ runner }) => ({ ...runner.identity, role: runner.role, position: runner.position }));
  }

  /** Last failure of a projection's runner in this process, if it has not recovered since. */
  failure(name: string): { error: string; at: string } | null {
    const found = [...this.failures.entries()].find(([key]) => key.startsWith(`${name}:`));
    return found === undefined ? null : { error: found[1].error, at: found[1].at };
  }

  private async reconcile(): Promise<void> {
    const catalog = await readCatalog(this.deps.sql);
    for (const definition of this.deps.definitions) {
      const entry = catalog.get(definition.name);
      if (entry !== undefined) await this.reconcileOne(definition, entry);
    }
  }

  private async reconcileOne(definition: AnyProjectionDefinition, entry: CatalogEntry): Promise<void> {
    const live = entry.versions.find((v) => v.version === entry.liveVersion)!;
    const building = entry.versions.find((v) => v.version === entry.buildingVersion);
    if ((building ?? live).definitionVersion < definition.version) {
      // This code projects differently from what is stored: rebuild beside it, switch when caught up.
      const { version } = await requestRebuild(this.deps.sql, definition, randomUUID());
      this.log.info('projection definition changed; rebuilding', {
        projection: definition.name,
        version,
        definitionVersion: definition.version,
      });
      this.again = true;
      return;
    }
    const wanted = new Map<number, RunnerRole>();
    // Only versions of this code's definition: an older or newer one belongs to other processes.
    if (live.definitionVersion === definition.version) wanted.set(live.version, 'live');
    if (building?.definitionVersion === definition.version) wanted.set(building.version, 'building');
    for (const [key, running] of this.running) {
      const [name, version] = key.split(':');
      if (name === definition.name && !wanted.has(Number(version))) running.abort.abort();
    }
    for (const [version, role] of wanted) {
      const key = `${definition.name}:${version}`;
      if (this.running.has(key) || (this.failures.get(key)?.retryAt ?? 0) > Date.now() || this.stopped) continue;
      const lock = await this.locks.tryAcquire(`flostra.projector:${key}`);
      if (lock === null) continue;
      if (this.stopped) {
        await lock.release();
        return;
      }
      this.launch(key, definition, version, role, lock);
    }
    if (entry.versions.some((v) => v.status === 'retired' || v.status === 'abandoned')) await dropUnusedVersions(this.deps.sql, definition);
  }

  /** A projection that feeds live streams holds batches back briefly while a live stream follows it. */
  private gatherMsOf(definition: AnyProjectionDefinition): number {
    return this.deps.signals.watched(definition.name) ? this.options.liveGatherMs : this.options.gatherMs;
  }

  private launch(key: string, definition: AnyProjectionDefinition, version: number, role: RunnerRole, lock: SessionLock): void {
    const { sql, store, signals } = this.deps;
    const batchSize = role === 'building' ? this.options.rebuildBatchSize : this.options.liveBatchSize;
    const runner = new ProjectionRunner({
      sql,
      store,
      definition,
      version,
      role,
      batchSize,
      signals,
      log: this.log,
      hooks: this.options.hooks,
      gatherMs: definition.feedsLiveStreams === true ? () => this.gatherMsOf(definition) : this.options.gatherMs,
      onCommitted: () => this.failures.delete(key),
      shared: this.shared,
    });
    const abort = new AbortController();
    const onLost = () => abort.abort();
    lock.lost.addEventListener('abort', onLost);
    if (lock.lost.aborted) abort.abort();
    this.log.info('projection runner started', { projection: definition.name, version, role });
    const done = runner
      .run(abort.signal)
      .then(
        (end) => {
          this.log.info('projection runner ended', { projection: definition.name, version, end });
        },
        (error: unknown) => {
          // Never skip what cannot be applied: stop, report, and try again later.
          const delayMs = Math.min((this.failures.get(key)?.delayMs ?? this.options.retryDelayMs / 2) * 2, 30_000);
          this.failures.set(key, { error: String(error), at: new Date().toISOString(), retryAt: Date.now() + delayMs, delayMs });
          this.log.error('projection runner failed', { projection: definition.name, version, error, retryInMs: delayMs });
        },
      )
      .finally(async () => {
        lock.lost.removeEventListener('abort', onLost);
        this.running.delete(key);
        await lock.release().catch(() => undefined);
        this.poke();
      });
    this.running.set(key, { runner, abort, done });
  }
}
